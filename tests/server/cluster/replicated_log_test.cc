// A model's write log in cluster mode on a real three-node NATS JetStream
// cluster: a write is answered with what this server's replica did once it
// applied it; a batch sent again is the first one's duplicate; the count
// of announced samples is settled by their ticket; no follower (or a stopped
// one) refuses writes; and a replica catching up on its log sends writes and
// reads to the model's other servers.
#include "server/cluster/replicated_log.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/served_by.h"
#include "gtest/gtest.h"
#include "server/cluster/log_entries.h"
#include "server/hosting/worker_pool.h"
#include "tests/support/cluster_parts.h"
#include "tests/support/model_test_support.h"
#include "tests/support/nats_cluster_test.h"

namespace streamreg {
namespace {

constexpr absl::Duration kWait = absl::Seconds(30);

class ReplicatedLogTest : public NatsClusterTest {
 protected:
  void SetUp() override {
    NatsClusterTest::SetUp();
    ASSERT_NE(client_, nullptr);
    config_ = BaseConfig();
    std::optional<LogStream> log = LogWithCreateEntry(*client_, "arm", config_);
    ASSERT_TRUE(log.has_value());
    hosted_ = HostedModelOf("arm", config_, {&writes_, &learning_});
    log_ = std::make_unique<ReplicatedLog>(
        *std::move(log), "arm",
        ReplicatedLog::Options{.writer = "server-a/1",
                               .append_timeout = kWait});
  }

  // A follower of the log from entry 2 (the create entry made the model),
  // that at its start counts `stored` entries to catch up on.
  void StartFollowing(std::uint64_t stored = 0) {
    follower_ = LogFollower::Start(log_->log(), ApplierOf(*hosted_), 2, stored);
    log_->Follow(follower_);
  }

  ValidatedSamples Batch(const Stream& stream, std::size_t begin,
                         std::size_t end) const {
    const std::vector<Sample> samples = Slice(stream, begin, end);
    absl::StatusOr<ValidatedSamples> batch = hosted_->model().Validate(samples);
    EXPECT_TRUE(batch.ok()) << batch.status();
    return batch.ok() ? *std::move(batch) : ValidatedSamples();
  }

  static WriteOptions Options() { return {.deadline = absl::Now() + kWait}; }

  ModelConfig config_;
  WorkerPool writes_{2};
  WorkerPool learning_{2};
  std::shared_ptr<HostedModel> hosted_;
  std::unique_ptr<ReplicatedLog> log_;
  std::shared_ptr<LogFollower> follower_;
};

TEST_F(ReplicatedLogTest, AWriteIsAnsweredOnceThisReplicaAppliedIt) {
  StartFollowing();
  const Stream stream = MakeStream(60, 3);
  absl::StatusOr<LearnOutcome> outcome =
      log_->AppendSamples(Batch(stream, 0, 40), Options());
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->accepted, 40u);
  EXPECT_EQ(outcome->duplicates, 0u);
  // Applied here before the answer (the entry, and the batch handed to
  // the model's learner).
  EXPECT_EQ(log_->progress().applied, 2u);
  hosted_->CatchUp();
  EXPECT_EQ(hosted_->model().samples_seen(), 40u);
  // A refit goes through the log too.
  ASSERT_TRUE(log_->AppendRefit({}, absl::Now() + kWait).ok());
  EXPECT_EQ(log_->progress().applied, 3u);
}

TEST_F(ReplicatedLogTest, ABatchSentAgainIsTheFirstOnesDuplicate) {
  StartFollowing();
  const Stream stream = MakeStream(40, 4);
  ASSERT_TRUE(log_->AppendSamples(Batch(stream, 0, 40), Options()).ok());
  absl::StatusOr<LearnOutcome> again =
      log_->AppendSamples(Batch(stream, 0, 40), Options());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->accepted, 0u);
  EXPECT_EQ(again->duplicates, 40u);
  EXPECT_EQ(again->duplicate, std::vector<bool>(40, true));
  hosted_->CatchUp();
  EXPECT_EQ(hosted_->model().samples_seen(), 40u);
  EXPECT_EQ(log_->progress().applied, 2u);  // one entry in the log
}

TEST_F(ReplicatedLogTest, AnnouncedSamplesAreSettledByTheirTicket) {
  StartFollowing();
  const Stream stream = MakeStream(41, 5);
  WriteTicket ticket = hosted_->Announce(AdmissionTicket(), 40);
  absl::StatusOr<HostedModel::StandingPrediction> before =
      hosted_->AnswerAsItStands(stream.sample(40));
  ASSERT_TRUE(before.ok()) << before.status();
  EXPECT_EQ(before->unlearned, 40u);
  WriteOptions options = Options();
  options.ticket = &ticket;
  ASSERT_TRUE(log_->AppendSamples(Batch(stream, 0, 40), options).ok());
  // The follower queued the entry's samples, knowing nothing of the
  // ticket: they stay announced until its holder, the write done, drops it.
  EXPECT_EQ(ticket.announced(), 40u);
  ticket.Release();
  // Learned, and no longer announced: nothing is left unlearned.
  hosted_->CatchUp();
  absl::StatusOr<HostedModel::StandingPrediction> after =
      hosted_->AnswerAsItStands(stream.sample(40));
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->unlearned, 0u);
}

TEST_F(ReplicatedLogTest, WithoutAFollowerWritesAreRefused) {
  const Stream stream = MakeStream(10, 6);
  absl::StatusOr<LearnOutcome> none =
      log_->AppendSamples(Batch(stream, 0, 10), Options());
  EXPECT_TRUE(absl::IsUnavailable(none.status())) << none.status();
  StartFollowing();
  log_->Stop();  // the model left this server
  absl::StatusOr<LearnOutcome> stopped =
      log_->AppendSamples(Batch(stream, 0, 10), Options());
  EXPECT_TRUE(absl::IsUnavailable(stopped.status())) << stopped.status();
  hosted_->CatchUp();
  EXPECT_EQ(hosted_->model().samples_seen(), 0u);
}

TEST_F(ReplicatedLogTest, ACatchingUpReplicaSendsCallsToTheOtherServers) {
  // As if the log held an entry more than it does: catching up until then.
  StartFollowing(/*stored=*/5);
  ASSERT_TRUE(log_->progress().catching_up);
  // Alone, it would take a write itself, and has nowhere to send a read.
  const absl::Status alone = log_->ReadableHere();
  EXPECT_TRUE(absl::IsUnavailable(alone)) << alone;
  EXPECT_TRUE(ServedBy(alone).empty()) << alone;
  EXPECT_TRUE(log_->ReadElsewhere("not learned here").ok());
  const std::vector<std::string> others = {"127.0.0.1:7001", "127.0.0.1:7002"};
  log_->SetOtherServers(others);
  const Stream stream = MakeStream(10, 7);
  absl::StatusOr<LearnOutcome> write =
      log_->AppendSamples(Batch(stream, 0, 10), Options());
  EXPECT_TRUE(absl::IsUnavailable(write.status())) << write.status();
  EXPECT_EQ(ServedBy(write.status()), others);
  const absl::Status read = log_->ReadableHere();
  EXPECT_TRUE(absl::IsUnavailable(read)) << read;
  EXPECT_EQ(ServedBy(read), others);
  const absl::Status elsewhere = log_->ReadElsewhere("not learned here");
  EXPECT_EQ(ServedBy(elsewhere), others);
  hosted_->CatchUp();
  EXPECT_EQ(hosted_->model().samples_seen(), 0u);
}

}  // namespace
}  // namespace streamreg
