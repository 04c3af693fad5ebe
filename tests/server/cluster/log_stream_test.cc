// A model's replicated log against a real three-node NATS JetStream cluster
// on loopback: order, deduplicated retries, and acknowledged entries that
// survive nodes killed with SIGKILL.
#include "server/cluster/log_stream.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "nats/nats.h"
#include "server/cluster/jetstream_client.h"
#include "tests/support/nats_cluster_test.h"

namespace streamreg {
namespace {

class LogStreamTest : public NatsClusterTest {
 protected:
  LogStream Open(const std::string& model, JetStreamClient* client = nullptr) {
    absl::StatusOr<LogStream> log = Retried([&] {
      return LogStream::Open(client == nullptr ? *client_ : *client, model, {});
    });
    EXPECT_TRUE(log.ok()) << log.status();
    return *std::move(log);
  }

  static std::string Payload(std::uint64_t i) {
    return absl::StrCat("samples of batch ", i, std::string(i % 50, '*'));
  }

  // Appends entries [begin, end) under ids "model/i", retrying each as a
  // client would; each must be acknowledged at sequence i + 1.
  static void AppendAll(LogStream& log, std::uint64_t begin,
                        std::uint64_t end) {
    for (std::uint64_t i = begin; i < end; ++i) {
      absl::StatusOr<LogStream::Appended> appended = Retried(
          [&] { return log.Append(absl::StrCat("model/", i), Payload(i)); });
      ASSERT_TRUE(appended.ok()) << appended.status();
      ASSERT_EQ(appended->sequence, i + 1);
    }
  }

  // The log holds exactly entries [0, n), in order.
  static void ExpectEntries(const LogStream& log, std::uint64_t n) {
    std::vector<LogEntry> entries;
    const absl::Status read =
        Retried([&] { return log.Read(1, n + 10, &entries); });
    ASSERT_TRUE(read.ok()) << read;
    ASSERT_EQ(entries.size(), n);
    for (std::uint64_t i = 0; i < n; ++i) {
      EXPECT_EQ(entries[i].sequence, i + 1);
      EXPECT_EQ(entries[i].message_id, absl::StrCat("model/", i));
      EXPECT_EQ(entries[i].payload, Payload(i));
    }
  }
};

TEST_F(LogStreamTest, AppendsInOrderAndReadsBackFromAnySequence) {
  LogStream log = Open("arm.v2_left-7");
  EXPECT_EQ(log.stream(), "streamreg_arm~v2_left-7");
  EXPECT_EQ(log.subject(), "streamreg.log.arm~v2_left-7");
  EXPECT_EQ(*log.LastSequence(), 0u);
  AppendAll(log, 0, 300);
  EXPECT_EQ(*log.LastSequence(), 300u);
  ExpectEntries(log, 300);
  std::vector<LogEntry> middle;
  ASSERT_TRUE(log.Read(120, 5, &middle).ok());
  ASSERT_EQ(middle.size(), 5u);
  EXPECT_EQ(middle.front().sequence, 120u);
  EXPECT_EQ(middle.back().payload, Payload(123));
  std::vector<LogEntry> beyond;
  ASSERT_TRUE(log.Read(301, 5, &beyond).ok());
  EXPECT_TRUE(beyond.empty());
  // Opened again (as another server would), it is the same log.
  LogStream again = Open("arm.v2_left-7");
  EXPECT_EQ(*again.LastSequence(), 300u);
  // One entry at a time, without a consumer, by a client that attached to
  // the log without making it.
  LogStream attached = LogStream::Attach(*client_, "arm.v2_left-7", {});
  for (std::uint64_t sequence : {1u, 2u, 150u, 300u}) {
    absl::StatusOr<LogEntry> entry = attached.Entry(sequence);
    ASSERT_TRUE(entry.ok()) << entry.status();
    EXPECT_EQ(entry->sequence, sequence);
    EXPECT_EQ(entry->message_id, absl::StrCat("model/", sequence - 1));
    EXPECT_EQ(entry->payload, Payload(sequence - 1));
  }
  EXPECT_TRUE(absl::IsNotFound(attached.Entry(301).status()));
  // Another model's log is another stream.
  LogStream other = Open("arm.v2");
  EXPECT_EQ(*other.LastSequence(), 0u);
}

// Each short read closes its cursor while the consumer is still sending
// the entries after it. libnats 3.4.1 uses a subscription freed in that
// moment (StreamCursor retires them through SubscriptionReaper): before,
// this crashed within a second.
TEST_F(LogStreamTest, ReadsClosedWhileEntriesStillArriveAreSafe) {
  LogStream log = Open("short-reads");
  AppendAll(log, 0, 200);
  for (std::uint64_t i = 0; i < 1000; ++i) {
    std::vector<LogEntry> one;
    ASSERT_TRUE(log.Read(1 + i % 50, 1, &one).ok());
    ASSERT_EQ(one.size(), 1u);
    EXPECT_EQ(one.front().payload, Payload(i % 50));
  }
}

TEST_F(LogStreamTest, ARetriedAppendIsStoredOnce) {
  LogStream log = Open("dedup");
  AppendAll(log, 0, 10);
  // The client lost the ack of entry 9 and sends it again.
  absl::StatusOr<LogStream::Appended> retry = log.Append("model/9", Payload(9));
  ASSERT_TRUE(retry.ok()) << retry.status();
  EXPECT_TRUE(retry->duplicate);
  EXPECT_EQ(retry->sequence, 10u);
  AppendAll(log, 10, 12);
  ExpectEntries(log, 12);
}

// Every acknowledged entry is on a quorum: with one node killed (-9) the log
// goes on; restarted, that node catches up, and with another killed the
// log still holds every entry, for a client of any node.
TEST_F(LogStreamTest, AcknowledgedEntriesSurviveNodesKilledAndRestarted) {
  LogStream log = Open("survivor");
  AppendAll(log, 0, 100);
  for (std::size_t killed = 0; killed < cluster_->size(); ++killed) {
    SCOPED_TRACE(absl::StrCat("node ", killed, " killed"));
    cluster_->Kill(killed);
    AppendAll(log, 100 * (killed + 1), 100 * (killed + 2));
    ExpectEntries(log, 100 * (killed + 2));
    ASSERT_TRUE(cluster_->Restart(killed).ok());
  }
  // A client of the last node restarted alone reads them all.
  std::unique_ptr<JetStreamClient> late = Connect({cluster_->urls().back()});
  ASSERT_NE(late, nullptr);
  ExpectEntries(Open("survivor", late.get()), 400);
}

// Without a quorum nothing is acknowledged: the append fails UNAVAILABLE
// within the request timeout, and once a quorum is back, the client's retry
// under the same id is stored once.
TEST_F(LogStreamTest, WithoutAQuorumAppendsFailAndTheirRetriesLandOnce) {
  LogStream log = Open("quorum");
  AppendAll(log, 0, 20);
  cluster_->Kill(1);
  cluster_->Kill(2);
  const absl::StatusOr<LogStream::Appended> lost =
      log.Append("model/20", Payload(20));
  ASSERT_FALSE(lost.ok());
  EXPECT_TRUE(absl::IsUnavailable(lost.status())) << lost.status();
  ASSERT_TRUE(cluster_->Restart(1).ok());
  ASSERT_TRUE(cluster_->Restart(2).ok());
  AppendAll(log, 20, 30);
  ExpectEntries(log, 30);
}

// What a client does with a NATS failure: try again (UNAVAILABLE) where the
// cluster may answer later — a timeout, a lost or broken connection, a
// node with no quorum — and not where it never will.
TEST(NatsErrorTest, WhatTheClusterMayAnswerLaterIsUnavailable) {
  for (natsStatus status :
       {NATS_TIMEOUT, NATS_NO_SERVER, NATS_NO_RESPONDERS,
        NATS_CONNECTION_CLOSED, NATS_CONNECTION_DISCONNECTED,
        NATS_STALE_CONNECTION, NATS_NOT_YET_CONNECTED, NATS_IO_ERROR}) {
    const absl::Status error = NatsError(status, 0, "appending");
    EXPECT_TRUE(absl::IsUnavailable(error)) << error;
    EXPECT_TRUE(absl::StartsWith(error.message(), "appending: ")) << error;
  }
  EXPECT_TRUE(absl::IsUnavailable(
      NatsError(NATS_ERR, JSClusterNotAvailErr, "appending")));
  EXPECT_TRUE(
      absl::IsNotFound(NatsError(NATS_ERR, JSStreamNotFoundErr, "reading")));
  EXPECT_TRUE(absl::IsNotFound(NatsError(NATS_NOT_FOUND, 0, "reading")));
  EXPECT_TRUE(absl::IsInternal(NatsError(NATS_INVALID_ARG, 0, "appending")));
}

TEST_F(LogStreamTest, CompactingRemovesTheEntriesASnapshotIncludes) {
  LogStream log = Open("compacted");
  AppendAll(log, 0, 10);
  EXPECT_EQ(*log.FirstSequence(), 1u);
  ASSERT_TRUE(Retried([&] { return log.Compact(0); }).ok());  // nothing
  EXPECT_EQ(*log.FirstSequence(), 1u);
  ASSERT_TRUE(Retried([&] { return log.Compact(6); }).ok());
  EXPECT_EQ(*log.FirstSequence(), 7u);
  EXPECT_EQ(*log.LastSequence(), 10u);
  // A reader from before the first entry kept starts there.
  std::vector<LogEntry> entries;
  ASSERT_TRUE(Retried([&] { return log.Read(1, 100, &entries); }).ok());
  ASSERT_EQ(entries.size(), 4u);
  for (std::uint64_t i = 0; i < 4; ++i) {
    EXPECT_EQ(entries[i].sequence, 7 + i);
    EXPECT_EQ(entries[i].payload, Payload(6 + i));
  }
  // Appends go on after the entries kept, and the whole log can go too.
  AppendAll(log, 10, 12);
  ASSERT_TRUE(Retried([&] { return log.Compact(12); }).ok());
  EXPECT_EQ(*log.FirstSequence(), 13u);
  EXPECT_EQ(*log.LastSequence(), 12u);
  ASSERT_TRUE(Retried([&] { return log.Read(1, 100, &entries); }).ok());
  EXPECT_TRUE(entries.empty());
}

TEST_F(LogStreamTest, AttachingMakesNoStream) {
  LogStream attached = LogStream::Attach(*client_, "not-made", {});
  EXPECT_TRUE(absl::IsNotFound(attached.LastSequence().status()));
  EXPECT_TRUE(absl::IsNotFound(attached.Entry(1).status()));
  // Made by its creator, the attached log reads it.
  LogStream made = Open("not-made");
  AppendAll(made, 0, 1);
  absl::StatusOr<LogEntry> first = attached.Entry(1);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->payload, Payload(0));
}

// nats-server places no stream on a node that shut down: a log made then
// has a majority of its copies, takes appends, and gets the rest once the
// node is back.
TEST_F(LogStreamTest, ALogMadeWhileANodeIsStoppedGetsItsCopiesBackLater) {
  cluster_->Stop(2);
  const absl::StatusOr<LogStream> full =
      LogStream::Open(*client_, "whole", {.replicas = 3});
  EXPECT_TRUE(absl::IsUnavailable(full.status())) << full.status();
  absl::StatusOr<LogStream> log = Retried([&] {
    return LogStream::Open(*client_, "short",
                           {.replicas = 3, .min_replicas = 2});
  });
  ASSERT_TRUE(log.ok()) << log.status();
  const auto replicas = [&] {
    absl::StatusOr<JetStreamClient::StreamState> state =
        Retried([&] { return client_->State(log->stream(), "", "state"); });
    EXPECT_TRUE(state.ok()) << state.status();
    return state.ok() ? state->replicas : -1;
  };
  EXPECT_EQ(replicas(), 2);
  AppendAll(*log, 0, 20);
  EXPECT_TRUE(absl::IsUnavailable(log->RestoreReplicas()));
  EXPECT_EQ(replicas(), 2);

  ASSERT_TRUE(cluster_->Restart(2).ok());
  ASSERT_TRUE(Retried([&] { return log->RestoreReplicas(); }).ok());
  EXPECT_EQ(replicas(), 3);
  ASSERT_TRUE(log->RestoreReplicas().ok());  // nothing more to do
  // The third copy counts: with one of the first two nodes down, the log
  // (two copies of three) still takes appends and reads back whole.
  cluster_->Stop(1);
  AppendAll(*log, 20, 30);
  ExpectEntries(*log, 30);
}

TEST_F(LogStreamTest, DeletingALogRemovesItsEntries) {
  LogStream log = Open("deleted");
  AppendAll(log, 0, 5);
  ASSERT_TRUE(log.Delete().ok());
  EXPECT_TRUE(absl::IsNotFound(log.LastSequence().status()));
  EXPECT_TRUE(absl::IsNotFound(log.Entry(1).status()));
  LogStream fresh = Open("deleted");
  EXPECT_EQ(*fresh.LastSequence(), 0u);
}

}  // namespace
}  // namespace streamreg
