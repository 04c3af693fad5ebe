#ifndef STREAMREG_SERVER_HOSTING_LEARN_BATCHER_H_
#define STREAMREG_SERVER_HOSTING_LEARN_BATCHER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "core/base/mutex.h"
#include "core/model/model.h"

namespace streamreg {

class HostedModel;

// Group commit for the robot's loop. Concurrent Learn streams each send one
// sample per message; logged one by one, every message would pay its own
// write-ahead-log fsync (under --sync=always) and they would queue behind
// each other's. The batcher collects the messages that arrive while the
// model's write queue is busy and logs them as one batch when it gets its
// turn: one log record, one fsync (in cluster mode, one append to the
// replicated log), then the batch learned after (HostedModel::Learn) — the
// model learns exactly what learning them one after another would have
// taught it. Each request is told once its sample is durable (or why it
// cannot be). A stream answers its messages before that (LearnReactor);
// a request that asks for a prediction gets the one the model made just
// before the batch was logged (the cautious mode). A message that finds
// the queue idle is logged at once, alone.
class LearnBatcher {
 public:
  struct Result {
    absl::Status status;
    std::uint64_t sequence = 0;
    bool duplicate = false;
    // The model's prediction for the sample (LearnOutcome), if asked for.
    Prediction before;
    absl::Duration learn_lag;
  };
  struct Request {
    // Validated by the caller (Model::Validate: a bad one would fail its
    // whole group, which is then learned one by one); must stay valid
    // until `done` runs.
    Sample sample;
    // Whether `done` gets the model's prediction for the sample.
    bool predict = false;
    // Asked just before learning: a request whose caller is gone is
    // answered CANCELLED, not learned.
    std::function<bool()> cancelled;
    // The caller's: how long a cluster model's write may wait for this
    // replica's apply (the latest of a batch's requests counts).
    absl::Time deadline = absl::InfiniteFuture();
    std::function<void(Result)> done;
  };

  // Samples per batch at most (a burst is learned in several).
  static constexpr std::size_t kMaxBatch = 256;

  // Queues the request; it is answered on the model's write queue.
  static void Submit(const std::shared_ptr<HostedModel>& model,
                     Request request);

 private:
  friend class HostedModel;
  // Learns every request queued now (on the model's write queue).
  static void Drain(const std::shared_ptr<HostedModel>& model);
  static void LearnAlone(HostedModel& model, Request& request);
  std::vector<Request> TakeBatch() ABSL_LOCKS_EXCLUDED(mutex_);

  Mutex mutex_;
  std::vector<Request> pending_ ABSL_GUARDED_BY(mutex_);
  bool scheduled_ ABSL_GUARDED_BY(mutex_) = false;  // a Drain is posted
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_HOSTING_LEARN_BATCHER_H_
