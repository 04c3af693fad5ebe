// A model's snapshots in JetStream against a real three-node NATS
// cluster on loopback: read back whole across chunks, by any client; the
// newest two kept and the log sequence a put frees; a newest snapshot that
// lost a chunk falls back to the one before it; increments read back as a
// chain up to the newest readable one, kept until the whole put after the
// next; increments put while a whole snapshot is put a slice at a time
// read back first while they cover more of the log.
#include "server/cluster/snapshot_store.h"

#include <cstdint>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "nats/nats.h"
#include "server/cluster/jetstream_client.h"
#include "tests/support/nats_cluster_test.h"

namespace streamreg {
namespace {

constexpr std::size_t kChunk = 1000;

class SnapshotStoreTest : public NatsClusterTest {
 protected:
  SnapshotStore Open(const std::string& model,
                     JetStreamClient* client = nullptr) {
    return SnapshotStore::Open(client == nullptr ? *client_ : *client, model,
                               {.chunk_bytes = kChunk});
  }

  // `size` bytes that differ from snapshot to snapshot and within one.
  static std::string Bytes(std::size_t size, char seed) {
    std::string bytes(size, '\0');
    for (std::size_t i = 0; i < size; ++i) {
      bytes[i] = static_cast<char>(seed + i * 7 + i / 251);
    }
    return bytes;
  }

  static std::uint64_t Put(SnapshotStore& store, std::uint64_t log_sequence,
                           const std::string& bytes) {
    absl::StatusOr<std::uint64_t> freed =
        Retried([&] { return store.Put(log_sequence, bytes); });
    EXPECT_TRUE(freed.ok()) << freed.status();
    return freed.value_or(~0ull);
  }

  static void PutIncrement(SnapshotStore& store, std::uint64_t log_sequence,
                           const std::string& bytes) {
    const absl::Status put =
        Retried([&] { return store.PutIncrement(log_sequence, bytes); });
    EXPECT_TRUE(put.ok()) << put;
  }

  void DeleteMessage(const std::string& model, std::uint64_t sequence) {
    jsErrCode code = static_cast<jsErrCode>(0);
    ASSERT_EQ(js_DeleteMsg(client_->jetstream(),
                           SnapshotStore::StreamName(model).c_str(), sequence,
                           nullptr, &code),
              NATS_OK);
  }

  // The messages the snapshot stream holds.
  std::uint64_t StoredMessages(const std::string& model) {
    jsStreamInfo* info = nullptr;
    jsErrCode code = static_cast<jsErrCode>(0);
    const std::string stream = SnapshotStore::StreamName(model);
    EXPECT_EQ(js_GetStreamInfo(&info, client_->jetstream(), stream.c_str(),
                               nullptr, &code),
              NATS_OK);
    const std::uint64_t messages = info == nullptr ? 0 : info->State.Msgs;
    jsStreamInfo_Destroy(info);
    return messages;
  }
};

TEST_F(SnapshotStoreTest, ReadsTheNewestBackWholeAndKeepsTheOneBeforeIt) {
  SnapshotStore store = Open("arm.v2");
  EXPECT_EQ(SnapshotStore::StreamName("arm.v2"), "streamreg-snap_arm~v2");
  EXPECT_TRUE(absl::IsNotFound(store.Newest().status()));
  // Opening made no stream: the first put does.
  jsStreamInfo* info = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  EXPECT_EQ(js_GetStreamInfo(&info, client_->jetstream(),
                             "streamreg-snap_arm~v2", nullptr, &code),
            NATS_NOT_FOUND);
  jsStreamInfo_Destroy(info);

  // 3.5 chunks, then exactly 2, then none at all.
  const std::string first = Bytes(3 * kChunk + kChunk / 2, 'a');
  EXPECT_EQ(Put(store, 10, first), 0u);  // nothing older to free the log
  absl::StatusOr<SnapshotStore::Snapshot> newest = store.Newest();
  ASSERT_TRUE(newest.ok()) << newest.status();
  EXPECT_EQ(newest->log_sequence, 10u);
  EXPECT_EQ(newest->bytes, first);

  const std::string second = Bytes(2 * kChunk, 'b');
  EXPECT_EQ(Put(store, 25, second), 10u);
  const std::string third;
  EXPECT_EQ(Put(store, 40, third), 25u);

  // Another client, on another node, reads what was put.
  std::unique_ptr<JetStreamClient> other = Connect({cluster_->urls()[2]});
  ASSERT_NE(other, nullptr);
  SnapshotStore reopened = Open("arm.v2", other.get());
  newest = reopened.Newest();
  ASSERT_TRUE(newest.ok()) << newest.status();
  EXPECT_EQ(newest->log_sequence, 40u);
  EXPECT_EQ(newest->bytes, third);
  // Kept: the second (2 chunks and a head) and the third (1 and a head).
  EXPECT_EQ(StoredMessages("arm.v2"), 5u);

  ASSERT_TRUE(SnapshotStore::Remove(*client_, "arm.v2").ok());
  EXPECT_TRUE(absl::IsNotFound(reopened.Newest().status()));
  EXPECT_TRUE(SnapshotStore::Remove(*client_, "arm.v2").ok());  // none left
}

TEST_F(SnapshotStoreTest, ANewestThatLostAChunkFallsBackToTheOneBefore) {
  SnapshotStore store = Open("lossy");
  const std::string first = Bytes(2 * kChunk + 1, 'x');
  Put(store, 7, first);  // stream sequences 1-3 chunks, 4 head
  const std::string second = Bytes(2 * kChunk, 'y');
  Put(store, 9, second);  // 5-6 chunks, 7 head
  jsErrCode code = static_cast<jsErrCode>(0);
  ASSERT_EQ(js_DeleteMsg(client_->jetstream(),
                         SnapshotStore::StreamName("lossy").c_str(), 6, nullptr,
                         &code),
            NATS_OK);
  absl::StatusOr<SnapshotStore::Snapshot> newest = store.Newest();
  ASSERT_TRUE(newest.ok()) << newest.status();
  EXPECT_EQ(newest->log_sequence, 7u);
  EXPECT_EQ(newest->bytes, first);

  // With the older one's chunk gone too, neither can be read: DATA_LOSS.
  ASSERT_EQ(js_DeleteMsg(client_->jetstream(),
                         SnapshotStore::StreamName("lossy").c_str(), 2, nullptr,
                         &code),
            NATS_OK);
  EXPECT_TRUE(absl::IsDataLoss(store.Newest().status()))
      << store.Newest().status();

  // A put after that is read back again, and only what it and the one
  // before it cover is kept.
  const std::string third = Bytes(kChunk / 3, 'z');
  EXPECT_EQ(Put(store, 12, third), 9u);
  newest = store.Newest();
  ASSERT_TRUE(newest.ok()) << newest.status();
  EXPECT_EQ(newest->log_sequence, 12u);
  EXPECT_EQ(newest->bytes, third);
}

TEST_F(SnapshotStoreTest, IncrementsAreReadBackAsAChain) {
  SnapshotStore store = Open("chain");
  EXPECT_TRUE(absl::IsFailedPrecondition(
      store.PutIncrement(5, Bytes(10, 'q'))));  // nothing to build on
  const std::string whole = Bytes(2 * kChunk + 1, 'w');
  EXPECT_EQ(Put(store, 10, whole), 0u);  // 1-3 chunks, 4 head
  const std::string first = Bytes(kChunk + kChunk / 2, 'f');
  PutIncrement(store, 15, first);  // 5-6, 7 head
  const std::string second = Bytes(kChunk / 2, 's');
  PutIncrement(store, 20, second);  // 8, 9 head

  // Any client reads the chain: the whole one and its increments in order.
  std::unique_ptr<JetStreamClient> other = Connect({cluster_->urls()[1]});
  ASSERT_NE(other, nullptr);
  SnapshotStore reader = Open("chain", other.get());
  absl::StatusOr<SnapshotStore::Snapshot> newest = reader.Newest();
  ASSERT_TRUE(newest.ok()) << newest.status();
  EXPECT_EQ(newest->log_sequence, 10u);
  EXPECT_EQ(newest->bytes, whole);
  ASSERT_EQ(newest->increments.size(), 2u);
  EXPECT_EQ(newest->increments[0].log_sequence, 15u);
  EXPECT_EQ(newest->increments[0].bytes, first);
  EXPECT_EQ(newest->increments[1].bytes, second);
  EXPECT_EQ(newest->newest_log_sequence(), 20u);

  // The newest increment damaged: the chain up to the one before it.
  DeleteMessage("chain", 8);
  newest = reader.Newest();
  ASSERT_TRUE(newest.ok()) << newest.status();
  ASSERT_EQ(newest->increments.size(), 1u);
  EXPECT_EQ(newest->newest_log_sequence(), 15u);

  // A whole put keeps the chain before it (the 8 messages left of 1-9)
  // beside its own 2, and frees the log up to that chain's whole snapshot
  // only (read cut at a damaged increment, the chain replays from there).
  const std::string next = Bytes(kChunk / 3, 'n');
  EXPECT_EQ(Put(store, 30, next), 10u);  // 10, 11 head
  EXPECT_EQ(StoredMessages("chain"), 8u + 2u);
  // Its chunk lost, the chain before it is read instead.
  DeleteMessage("chain", 10);
  newest = reader.Newest();
  ASSERT_TRUE(newest.ok()) << newest.status();
  EXPECT_EQ(newest->bytes, whole);
  EXPECT_EQ(newest->newest_log_sequence(), 15u);

  // The whole put after the next one purges that chain.
  EXPECT_EQ(Put(store, 40, Bytes(kChunk, 'm')), 30u);  // 12, 13 head
  EXPECT_EQ(StoredMessages("chain"), 1u + 2u);         // 11 (10 is gone), 12-13

  // An increment builds only on the newest head, and only on one this
  // store put.
  EXPECT_TRUE(
      absl::IsFailedPrecondition(reader.PutIncrement(45, Bytes(10, 'r'))));
  EXPECT_EQ(Put(reader, 50, Bytes(10, 'o')), 40u);
  EXPECT_TRUE(
      absl::IsFailedPrecondition(store.PutIncrement(55, Bytes(10, 'p'))));

  // A store that read the newest (a server that restored the model from
  // it) builds on it, while it is still the newest.
  newest = store.Newest();
  ASSERT_TRUE(newest.ok()) << newest.status();
  store.BuildOn(*newest);
  const std::string continued = Bytes(kChunk / 4, 'c');
  PutIncrement(store, 60, continued);
  newest = reader.Newest();
  ASSERT_TRUE(newest.ok()) << newest.status();
  EXPECT_EQ(newest->log_sequence, 50u);
  ASSERT_EQ(newest->increments.size(), 1u);
  EXPECT_EQ(newest->increments[0].bytes, continued);
  store.BuildOn(*newest);  // and on its own increment read back
  PutIncrement(store, 65, Bytes(10, 'd'));
  EXPECT_TRUE(
      absl::IsFailedPrecondition(reader.PutIncrement(70, Bytes(10, 'e'))));
  SnapshotStore late = Open("chain", other.get());
  late.BuildOn(*newest);  // no longer the newest
  EXPECT_TRUE(
      absl::IsFailedPrecondition(late.PutIncrement(70, Bytes(10, 'e'))));
}

TEST_F(SnapshotStoreTest, IncrementsGoOnWhileAWholeSnapshotIsPut) {
  SnapshotStore store = Open("sliced");
  const std::string before = Bytes(kChunk + 1, 'a');
  EXPECT_EQ(Put(store, 10, before), 0u);  // 1-2 chunks, 3 head
  const std::string first = Bytes(kChunk / 2, 'b');
  PutIncrement(store, 15, first);  // 4, 5 head

  // A whole snapshot of log sequence 20 put a slice (here a chunk) at a
  // time, with increments on the chain before it in between.
  const std::string whole = Bytes(3 * kChunk, 'w');
  absl::StatusOr<SnapshotStore::PendingPut> put =
      Retried([&] { return store.BeginPut(20, whole); });
  ASSERT_TRUE(put.ok()) << put.status();
  const auto slice = [&](absl::Duration length) {
    const absl::Status stored =
        Retried([&] { return store.PutChunks(*put, length); });
    EXPECT_TRUE(stored.ok()) << stored;
  };
  slice(absl::ZeroDuration());  // 6
  EXPECT_FALSE(put->chunks_stored());
  EXPECT_TRUE(absl::IsFailedPrecondition(store.FinishPut(*put).status()));
  const std::string second = Bytes(kChunk / 2, 'c');
  PutIncrement(store, 25, second);  // 7, 8 head
  SnapshotStore reader = Open("sliced");
  absl::StatusOr<SnapshotStore::Snapshot> newest = reader.Newest();
  ASSERT_TRUE(newest.ok()) << newest.status();
  EXPECT_EQ(newest->log_sequence, 10u);
  EXPECT_EQ(newest->newest_log_sequence(), 25u);
  slice(absl::ZeroDuration());  // 9
  const std::string third = Bytes(kChunk / 2, 'd');
  PutIncrement(store, 30, third);   // 10, 11 head
  slice(absl::InfiniteDuration());  // 12
  EXPECT_TRUE(put->chunks_stored());
  // Its head names the last increment as the one before it, and the log
  // is freed only through that chain's whole snapshot.
  absl::StatusOr<std::uint64_t> freed =
      Retried([&] { return store.FinishPut(*put); });  // 13 head
  ASSERT_TRUE(freed.ok()) << freed.status();
  EXPECT_EQ(*freed, 10u);

  // The whole one is the newest head, but the chain before it covers more
  // of the log: that chain is read, its increments in order.
  newest = reader.Newest();
  ASSERT_TRUE(newest.ok()) << newest.status();
  EXPECT_EQ(newest->log_sequence, 10u);
  EXPECT_EQ(newest->bytes, before);
  ASSERT_EQ(newest->increments.size(), 3u);
  EXPECT_EQ(newest->increments[0].bytes, first);
  EXPECT_EQ(newest->increments[1].bytes, second);
  EXPECT_EQ(newest->increments[2].bytes, third);
  EXPECT_EQ(newest->newest_log_sequence(), 30u);

  // That chain's newest increments damaged: cut back to 15, it covers less
  // than the whole one, which is read.
  DeleteMessage("sliced", 7);
  newest = reader.Newest();
  ASSERT_TRUE(newest.ok()) << newest.status();
  EXPECT_EQ(newest->log_sequence, 20u);
  EXPECT_EQ(newest->bytes, whole);
  EXPECT_TRUE(newest->increments.empty());

  // The next increment builds on the whole one, whose chain is the newest.
  const std::string after = Bytes(10, 'e');
  PutIncrement(store, 35, after);  // 14, 15 head
  newest = reader.Newest();
  ASSERT_TRUE(newest.ok()) << newest.status();
  EXPECT_EQ(newest->log_sequence, 20u);
  ASSERT_EQ(newest->increments.size(), 1u);
  EXPECT_EQ(newest->increments[0].bytes, after);

  // A put given up before its head leaves nothing read, and its chunks go
  // with the next put's purge.
  const std::string abandoned = Bytes(2 * kChunk, 'x');
  put = Retried([&] { return store.BeginPut(40, abandoned); });
  ASSERT_TRUE(put.ok()) << put.status();
  slice(absl::ZeroDuration());  // 16
  newest = reader.Newest();
  ASSERT_TRUE(newest.ok()) << newest.status();
  EXPECT_EQ(newest->newest_log_sequence(), 35u);
  EXPECT_EQ(Put(store, 45, Bytes(10, 'n')), 20u);  // 17, 18 head
  // Kept: the whole one of 20 (12 chunks' worth from 6 on, less the
  // chain before it's 7) with its increment, the abandoned chunk, and
  // the new put: messages 6 and 8-18.
  EXPECT_EQ(StoredMessages("sliced"), 12u);
}

}  // namespace
}  // namespace streamreg
