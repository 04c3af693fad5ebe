#ifndef STREAMREG_TESTS_SUPPORT_CLUSTER_PARTS_H_
#define STREAMREG_TESTS_SUPPORT_CLUSTER_PARTS_H_

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "server/cluster/jetstream_client.h"
#include "server/cluster/log_entries.h"
#include "server/cluster/log_stream.h"
#include "server/cluster/placement_store.h"
#include "server/cluster/replica_applier.h"
#include "server/cluster/retried_until.h"
#include "server/hosting/hosted_model.h"
#include "server/hosting/worker_pool.h"
#include "tests/support/model_test_support.h"
#include "tests/support/nats_cluster_test.h"

namespace streamreg {

// What the tests of the cluster node's parts build on, over a
// NatsClusterTest's client (each retried while the cluster elects, for up
// to 30 s, and a test failure if it never answers).

inline std::unique_ptr<PlacementStore> OpenPlacements(
    JetStreamClient& client, PlacementStore::Options options = {}) {
  absl::StatusOr<std::unique_ptr<PlacementStore>> store =
      RetriedUntil(absl::Now() + absl::Seconds(30),
                   [&] { return PlacementStore::Open(client, options); });
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? *std::move(store) : nullptr;
}

// Sets `name`'s placement (its servers, its log's generation, whether it
// is created) from whatever revision it is at.
inline void Place(PlacementStore& store, const std::string& name,
                  std::vector<std::string> servers, std::uint64_t log = 1,
                  bool created = true) {
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  absl::StatusOr<PlacementStore::Placement> now =
      RetriedUntil(deadline, [&] { return store.Get(name); });
  ASSERT_TRUE(now.ok()) << now.status();
  absl::StatusOr<std::uint64_t> set = RetriedUntil(deadline, [&] {
    return store.CompareAndSet(name, {.servers = servers,
                                      .revision = now->revision,
                                      .log = log,
                                      .created = created});
  });
  ASSERT_TRUE(set.ok()) << set.status();
}

// The log (generation 0) of model `name`, made and started with its
// create entry for `config`, as a create leaves it.
inline std::optional<LogStream> LogWithCreateEntry(JetStreamClient& client,
                                                   const std::string& name,
                                                   const ModelConfig& config) {
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  absl::StatusOr<LogStream> log =
      RetriedUntil(deadline, [&] { return LogStream::Open(client, name, {}); });
  EXPECT_TRUE(log.ok()) << log.status();
  if (!log.ok()) return std::nullopt;
  absl::StatusOr<LogStream::Appended> created = RetriedUntil(deadline, [&] {
    return log->Append(
        name + "/create",
        EncodeCreateEntry({name, absl::FromUnixSeconds(1), config, {}}));
  });
  EXPECT_TRUE(created.ok()) << created.status();
  return *std::move(log);
}

// A model of `config` as a server hosts it (made by a create at Unix
// second 1), its writes and learning on `pools`.
inline std::shared_ptr<HostedModel> HostedModelOf(const std::string& name,
                                                  const ModelConfig& config,
                                                  HostingPools pools) {
  return std::make_shared<HostedModel>(
      name, MakeModel(config), std::vector<std::string>{},
      absl::FromUnixSeconds(1),
      HostedModel::Limits{.max_samples = 0, .dedup_window = 10000}, pools);
}

// What a follower of `model`'s log applies its entries through, as a
// server hosting it makes it.
inline ReplicaApplier ApplierOf(HostedModel& model) {
  return ReplicaApplier(model.log_writer(), HostedModel::kMaxUnlearned);
}

// A NatsClusterTest with the cluster's placements store open
// (placements_, with PlacementOptions()).
class NatsPlacementsTest : public NatsClusterTest {
 protected:
  void SetUp() override {
    NatsClusterTest::SetUp();
    ASSERT_NE(client_, nullptr);
    placements_ = OpenPlacements(*client_, PlacementOptions());
    ASSERT_NE(placements_, nullptr);
  }
  virtual PlacementStore::Options PlacementOptions() const { return {}; }

  std::unique_ptr<PlacementStore> placements_;
};

}  // namespace streamreg

#endif  // STREAMREG_TESTS_SUPPORT_CLUSTER_PARTS_H_
