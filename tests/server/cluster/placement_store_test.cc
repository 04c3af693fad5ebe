// Placements and live servers in JetStream Key-Value on a real three-node
// cluster: compare-and-set lets exactly one of two proposers win and loses
// no update under contention; announcements expire once not renewed; a
// compacted proposal log keeps the register (its logs' generations too); a
// placement proposed before generations reads as generation 0.
#include "server/cluster/placement_store.h"

#include <atomic>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/byte_coding.h"
#include "gtest/gtest.h"
#include "server/cluster/log_stream.h"
#include "tests/support/nats_cluster_test.h"

namespace streamreg {
namespace {

class PlacementStoreTest : public NatsClusterTest {
 protected:
  void SetUp() override {
    NatsClusterTest::SetUp();
    ASSERT_NE(client_, nullptr);
    store_ = OpenStore(*client_);
    ASSERT_NE(store_, nullptr);
  }

  static std::unique_ptr<PlacementStore> OpenStore(
      JetStreamClient& client, std::uint64_t compact_every = 1000) {
    PlacementStore::Options options;
    options.server_ttl = absl::Seconds(2);
    options.compact_every = compact_every;
    absl::StatusOr<std::unique_ptr<PlacementStore>> store =
        Retried([&] { return PlacementStore::Open(client, options); });
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  }

  // Sets `model`'s servers (and its log's generation, and whether it is
  // created), from whatever revision it is at, retrying while the cluster
  // answers UNAVAILABLE (as a server does).
  static void Place(PlacementStore& store, const std::string& model,
                    const std::vector<std::string>& servers,
                    std::uint64_t log = 0, bool created = true) {
    absl::StatusOr<PlacementStore::Placement> now =
        Retried([&] { return store.Get(model); });
    ASSERT_TRUE(now.ok()) << now.status();
    absl::StatusOr<std::uint64_t> set = Retried([&] {
      return store.CompareAndSet(model, {.servers = servers,
                                         .revision = now->revision,
                                         .log = log,
                                         .created = created});
    });
    ASSERT_TRUE(set.ok()) << set.status();
  }

  // `model`'s placement, retried while the cluster answers UNAVAILABLE
  // (none, and a failure, if it never answers).
  static PlacementStore::Placement GetRetried(PlacementStore& store,
                                              const std::string& model) {
    absl::StatusOr<PlacementStore::Placement> placement =
        Retried([&] { return store.Get(model); });
    EXPECT_TRUE(placement.ok()) << placement.status();
    return placement.ok() ? *std::move(placement) : PlacementStore::Placement{};
  }

  static void ExpectSameRegister(PlacementStore& a, PlacementStore& b) {
    absl::StatusOr<absl::flat_hash_map<std::string, PlacementStore::Placement>>
        all_a = Retried([&] { return a.All(); });
    absl::StatusOr<absl::flat_hash_map<std::string, PlacementStore::Placement>>
        all_b = Retried([&] { return b.All(); });
    ASSERT_TRUE(all_a.ok()) << all_a.status();
    ASSERT_TRUE(all_b.ok()) << all_b.status();
    ASSERT_EQ(all_a->size(), all_b->size());
    for (const auto& [model, placement] : *all_a) {
      const auto found = all_b->find(model);
      ASSERT_NE(found, all_b->end()) << model;
      EXPECT_EQ(found->second.servers, placement.servers) << model;
      EXPECT_EQ(found->second.revision, placement.revision) << model;
      EXPECT_EQ(found->second.log, placement.log) << model;
      EXPECT_EQ(found->second.created, placement.created) << model;
    }
  }

  std::unique_ptr<PlacementStore> store_;
};

TEST_F(PlacementStoreTest, ExactlyOneOfTwoProposersWins) {
  absl::StatusOr<PlacementStore::Placement> none = store_->Get("arm.v1");
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->revision, 0u);
  EXPECT_TRUE(none->servers.empty());
  // Two servers propose the first placement at once: one wins.
  const std::vector<std::string> a = {"10.0.0.1:7000", "10.0.0.2:7000"};
  const std::vector<std::string> b = {"10.0.0.3:7000"};
  absl::StatusOr<std::uint64_t> first =
      store_->CompareAndSet("arm.v1", {.servers = a});
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<std::uint64_t> second =
      store_->CompareAndSet("arm.v1", {.servers = b});
  EXPECT_TRUE(absl::IsAborted(second.status())) << second.status();
  absl::StatusOr<PlacementStore::Placement> now = store_->Get("arm.v1");
  ASSERT_TRUE(now.ok());
  EXPECT_EQ(now->servers, a);
  EXPECT_EQ(now->revision, *first);
  // And again for a change of it, from the same revision.
  absl::StatusOr<std::uint64_t> moved =
      store_->CompareAndSet("arm.v1", {.servers = b, .revision = *first});
  ASSERT_TRUE(moved.ok()) << moved.status();
  EXPECT_TRUE(absl::IsAborted(
      store_->CompareAndSet("arm.v1", {.servers = a, .revision = *first})
          .status()));
  EXPECT_EQ(store_->Get("arm.v1")->servers, b);
}

// Eight writers through clients of different nodes, each adding itself to
// one placement ten times by read, change, compare-and-set (again on
// ABORTED): every one of the 80 additions is there.
// A proposal written before placements named their log's generation
// (model, revision, servers, and nothing after) reads as generation 0,
// created: the log every model had then, hosted as it was.
TEST_F(PlacementStoreTest, APlacementFromBeforeGenerationsReadsAsLogZero) {
  absl::StatusOr<LogStream> proposals = Retried([&] {
    return LogStream::OpenStream(*client_, "streamreg-placement",
                                 "streamreg.placement", {});
  });
  ASSERT_TRUE(proposals.ok()) << proposals.status();
  std::string legacy;
  ByteWriter out(&legacy);
  out.String("old.model");
  out.U64(0);  // the revision it replaces: none
  out.U64(2);
  out.String("a:1");
  out.String("b:2");
  ASSERT_TRUE(
      Retried([&] { return proposals->Append("legacy", legacy); }).ok());
  const PlacementStore::Placement read = GetRetried(*store_, "old.model");
  EXPECT_EQ(read.servers, (std::vector<std::string>{"a:1", "b:2"}));
  EXPECT_GT(read.revision, 0u);
  EXPECT_EQ(read.log, 0u);
  EXPECT_TRUE(read.created);
  // Changed since, it keeps them.
  PlacementStore::Placement moved = read;
  moved.servers = {"c:3"};
  ASSERT_TRUE(
      Retried([&] { return store_->CompareAndSet("old.model", moved); }).ok());
  const PlacementStore::Placement now = GetRetried(*store_, "old.model");
  EXPECT_EQ(now.servers, std::vector<std::string>{"c:3"});
  EXPECT_EQ(now.log, 0u);
  EXPECT_TRUE(now.created);
}

TEST_F(PlacementStoreTest, ContendedChangesLoseNoUpdate) {
  constexpr int kWriters = 8, kAdds = 10;
  std::vector<std::thread> writers;
  std::atomic<int> failures = 0;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      std::unique_ptr<JetStreamClient> client =
          Connect({cluster_->urls()[w % cluster_->size()]});
      if (client == nullptr) {
        ++failures;
        return;
      }
      std::unique_ptr<PlacementStore> store = OpenStore(*client);
      if (store == nullptr) {
        ++failures;
        return;
      }
      const absl::Time deadline = absl::Now() + absl::Seconds(60);
      for (int i = 0; i < kAdds; ++i) {
        for (;;) {
          if (absl::Now() > deadline) {
            ++failures;
            return;
          }
          absl::StatusOr<PlacementStore::Placement> now = store->Get("shared");
          if (!now.ok()) continue;
          now->servers.push_back(absl::StrCat("w", w, "-", i));
          absl::StatusOr<std::uint64_t> set =
              store->CompareAndSet("shared", *now);
          if (set.ok()) break;
          if (!absl::IsAborted(set.status())) {
            absl::SleepFor(absl::Milliseconds(20));
          }
        }
      }
    });
  }
  for (std::thread& writer : writers) writer.join();
  EXPECT_EQ(failures.load(), 0);
  const std::vector<std::string> servers =
      GetRetried(*store_, "shared").servers;
  EXPECT_EQ(servers.size(), static_cast<std::size_t>(kWriters * kAdds));
  EXPECT_EQ(std::set<std::string>(servers.begin(), servers.end()).size(),
            servers.size());
}

TEST_F(PlacementStoreTest, AServerThatStopsRenewingDropsOut) {
  ASSERT_TRUE(store_->Heartbeat("127.0.0.1:7001").ok());
  ASSERT_TRUE(store_->Heartbeat("127.0.0.1:7002").ok());
  absl::StatusOr<std::vector<std::string>> both = store_->LiveServers();
  ASSERT_TRUE(both.ok()) << both.status();
  EXPECT_EQ(*both,
            (std::vector<std::string>{"127.0.0.1:7001", "127.0.0.1:7002"}));
  // 7001 renews every 300 ms for 4 s (twice the 2 s TTL); 7002 does not.
  const absl::Time end = absl::Now() + absl::Seconds(4);
  while (absl::Now() < end) {
    absl::SleepFor(absl::Milliseconds(300));
    ASSERT_TRUE(store_->Heartbeat("127.0.0.1:7001").ok());
  }
  absl::StatusOr<std::vector<std::string>> live =
      Retried([&] { return store_->LiveServers(); });
  ASSERT_TRUE(live.ok()) << live.status();
  EXPECT_EQ(*live, (std::vector<std::string>{"127.0.0.1:7001"}));
  EXPECT_EQ(PlacementStore::ServerKey("127.0.0.1:7001"), "127.0.0.1=7001");
}

TEST_F(PlacementStoreTest, PlacementsOutliveANodeKilled) {
  const std::vector<std::string> servers = {"a:1", "b:2", "c:3"};
  ASSERT_TRUE(store_->CompareAndSet("kept", {.servers = servers}).ok());
  cluster_->Kill(0);
  absl::StatusOr<PlacementStore::Placement> read =
      Retried([&] { return store_->Get("kept"); });
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->servers, servers);
  absl::StatusOr<std::uint64_t> moved = Retried([&] {
    return store_->CompareAndSet(
        "kept", {.servers = {"a:1", "b:2", "d:4"}, .revision = read->revision});
  });
  ASSERT_TRUE(moved.ok()) << moved.status();
  ASSERT_TRUE(cluster_->Restart(0).ok());
  EXPECT_EQ(GetRetried(*store_, "kept").servers,
            (std::vector<std::string>{"a:1", "b:2", "d:4"}));
}

// Compacted every 10 proposals: the log loses its early proposals; a store
// opened afterwards reads the same register (servers and revisions, a
// deleted model's included) from the snapshot and the proposals after it,
// and judges a proposal as the others do; a store whose node was down
// while the log was compacted past it reads the same register once back.
TEST_F(PlacementStoreTest, ACompactedProposalLogKeepsTheRegister) {
  std::unique_ptr<JetStreamClient> first_node = Connect({cluster_->urls()[0]});
  // Cut off while its node is down.
  std::unique_ptr<JetStreamClient> last_node =
      Connect({cluster_->urls()[2]}, /*only_listed_servers=*/true);
  ASSERT_NE(first_node, nullptr);
  ASSERT_NE(last_node, nullptr);
  std::unique_ptr<PlacementStore> compacting = OpenStore(*first_node, 10);
  std::unique_ptr<PlacementStore> behind = OpenStore(*last_node, 10);
  ASSERT_NE(compacting, nullptr);
  ASSERT_NE(behind, nullptr);
  ASSERT_NO_FATAL_FAILURE(Place(*compacting, "m0", {"a:1"}));
  ASSERT_TRUE(behind->Get("m0").ok());
  cluster_->Kill(2);

  // 6 rounds of 8 proposals: snapshots at about 16, 32 and 48; the
  // proposals through the older kept one leave the log.
  for (int round = 0; round < 6; ++round) {
    for (int m = 0; m < 8; ++m) {
      const std::vector<std::string> servers =
          round == 5 && m == 7 ? std::vector<std::string>{}  // deleted
                               : std::vector<std::string>{
                                     absl::StrCat("s", round, ":", 7000 + m)};
      // Each with its log's generation, and half of them being created.
      ASSERT_NO_FATAL_FAILURE(Place(*compacting, absl::StrCat("m", m), servers,
                                    round + 1, m % 2 == 0));
    }
    ASSERT_TRUE(Retried([&] { return compacting->CompactIfDue(); }).ok());
  }
  absl::StatusOr<LogStream::Bounds> bounds = compacting->ProposalBounds();
  ASSERT_TRUE(bounds.ok()) << bounds.status();
  EXPECT_GT(bounds->first, 17u);
  EXPECT_GE(bounds->last, 49u);

  std::unique_ptr<PlacementStore> fresh = OpenStore(*client_, 10);
  ASSERT_NE(fresh, nullptr);
  ExpectSameRegister(*compacting, *fresh);
  // With a node down a call may meet a timeout: retried as a server's are
  // (an unchecked error here once crashed the test).
  absl::StatusOr<absl::flat_hash_map<std::string, PlacementStore::Placement>>
      all = Retried([&] { return fresh->All(); });
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_TRUE((*all)["m7"].servers.empty());
  EXPECT_EQ((*all)["m7"].log, 6u);
  EXPECT_TRUE((*all)["m2"].created);
  // A stale revision loses on any store; the current one wins.
  const PlacementStore::Placement m3 = GetRetried(*fresh, "m3");
  ASSERT_GT(m3.revision, 0u);
  EXPECT_EQ(m3.log, 6u);
  EXPECT_FALSE(m3.created);
  EXPECT_TRUE(
      absl::IsAborted(fresh
                          ->CompareAndSet("m3", {.servers = {"x:1"},
                                                 .revision = m3.revision - 1})
                          .status()));
  ASSERT_TRUE(
      fresh->CompareAndSet("m3", {.servers = {"x:1"}, .revision = m3.revision})
          .ok());
  EXPECT_EQ(GetRetried(*compacting, "m3").servers,
            std::vector<std::string>{"x:1"});

  ASSERT_TRUE(cluster_->Restart(2).ok());
  ExpectSameRegister(*compacting, *behind);
}

}  // namespace
}  // namespace streamreg
