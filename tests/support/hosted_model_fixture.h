#ifndef STREAMREG_TESTS_SUPPORT_HOSTED_MODEL_FIXTURE_H_
#define STREAMREG_TESTS_SUPPORT_HOSTED_MODEL_FIXTURE_H_

#include <cstdint>
#include <future>
#include <latch>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "server/hosting/hosted_model.h"
#include "server/hosting/worker_pool.h"
#include "tests/support/hosting_test_support.h"

namespace streamreg {

// What the tests of a hosted model and its parts share: a model hosted on
// one writes thread and one learning thread, a reference engine beside it,
// learning held behind; a signal between threads; a replicated log's entry
// applied as a replica applies it.

class HostedModelTest : public ::testing::Test {
 protected:
  std::shared_ptr<HostedModel> Host(HostedModel::Limits limits,
                                    ModelConfig config = SmallConfig()) {
    return std::make_shared<HostedModel>(
        "m", *Model::Create(std::move(config)), std::vector<std::string>{},
        absl::Now(), limits, HostingPools{&pool_, &learning_});
  }
  // A hosted model and a reference engine Model that both learned
  // `warmup`, the hosted one caught up.
  struct WarmedUp {
    std::shared_ptr<HostedModel> hosted;
    std::unique_ptr<Model> reference;
  };
  WarmedUp HostWarmedUp(const std::vector<Sample>& warmup) {
    WarmedUp pair{Host({.max_samples = 0, .dedup_window = 100}),
                  *Model::Create(SmallConfig())};
    EXPECT_TRUE(pair.hosted->Learn(warmup, nullptr).ok());
    EXPECT_TRUE(pair.reference->Learn(warmup).ok());
    pair.hosted->CatchUp();
    return pair;
  }
  // Holds the learning thread busy until the returned latch is counted
  // down.
  std::shared_ptr<std::latch> HoldLearning() { return HoldThread(learning_); }
  // A hosted model warmed up on 20 samples that then acknowledged 5 more
  // while its learning is held (until `release` is counted down), and the
  // reference that learned the 20.
  struct HeldBehind {
    std::shared_ptr<HostedModel> hosted;
    std::unique_ptr<Model> reference;
    std::shared_ptr<std::latch> release;
    std::unique_ptr<Batch> unlearned;  // the 5 (samples point into it)
  };
  HeldBehind HostHeldFiveBehind() {
    const Batch warmup(20, 1);
    auto stream = std::make_unique<Batch>(5, 5000);
    auto [hosted, reference] = HostWarmedUp(warmup.samples);
    std::shared_ptr<std::latch> release = HoldLearning();
    for (const Sample& sample : stream->samples) {
      EXPECT_TRUE(hosted->Learn({&sample, 1}, nullptr).ok());
    }
    return {std::move(hosted), std::move(reference), std::move(release),
            std::move(stream)};
  }

  WorkerPool pool_{1};
  WorkerPool learning_{1};
};

// A one-shot signal between threads that ThreadSanitizer sees (absl's
// synchronization comes from Debian's packages, not instrumented).
class Signal {
 public:
  void Notify() { promise_.set_value(); }
  bool WaitFor(absl::Duration timeout) {
    return future_.wait_for(absl::ToChronoNanoseconds(timeout)) ==
           std::future_status::ready;
  }
  bool Notified() { return WaitFor(absl::ZeroDuration()); }

 private:
  std::promise<void> promise_;
  std::future<void> future_ = promise_.get_future();
};

// Applies `samples` as entry `sequence` of a replicated log, as a
// replica's follower does (server/cluster/replica_applier.h): checked, then
// written through the model's log writer, and noted applied whatever came
// of it.
inline absl::StatusOr<LearnOutcome> ApplyAsLogEntry(
    HostedModel& model, std::span<const Sample> samples,
    std::uint64_t sequence) {
  const std::shared_ptr<ModelWriter> writer = model.log_writer();
  absl::StatusOr<ValidatedSamples> validated = model.model().Validate(samples);
  absl::StatusOr<LearnOutcome> outcome =
      validated.ok()
          ? writer->ApplySamples(*validated,
                                 {.record = {.log_sequence = sequence},
                                  .max_unlearned = HostedModel::kMaxUnlearned})
          : validated.status();
  writer->NoteApplied(sequence);
  return outcome;
}

}  // namespace streamreg

#endif  // STREAMREG_TESTS_SUPPORT_HOSTED_MODEL_FIXTURE_H_
