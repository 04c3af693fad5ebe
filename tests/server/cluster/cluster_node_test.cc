// The cluster node as server/rpc sees it, on a real three-node NATS
// JetStream cluster with two nodes in process: a model created through
// either is hosted by the server its placement names, reported there, and
// named by the other when asked for it; a deleted model leaves both, and
// a model nobody placed is NOT_FOUND.
#include "server/cluster/cluster_node.h"

#include <memory>
#include <string>
#include <vector>

#include "common/served_by.h"
#include "gtest/gtest.h"
#include "server/hosting/worker_pool.h"
#include "tests/support/model_test_support.h"
#include "tests/support/nats_cluster_test.h"

namespace streamreg {
namespace {

constexpr absl::Duration kWait = absl::Seconds(30);

class ClusterNodeTest : public NatsClusterTest {
 protected:
  struct Server {
    std::unique_ptr<ModelRegistry> registry;
    std::unique_ptr<ClusterNode> node;
  };
  Server Join(const std::string& address) {
    Server server;
    server.registry = std::make_unique<ModelRegistry>(
        RegistryLimits{}, HostingPools{&pool_, &learning_});
    ClusterOptions options;
    options.nats = cluster_->urls();
    options.advertise = address;
    options.replicas = 1;
    options.reconcile_interval = absl::Milliseconds(100);
    absl::StatusOr<std::unique_ptr<ClusterNode>> node =
        ClusterNode::Start(options, server.registry.get());
    EXPECT_TRUE(node.ok()) << node.status();
    if (node.ok()) server.node = *std::move(node);
    return server;
  }
  // Waits until `node` hosts exactly `models`.
  static bool Hosts(const ClusterNode& node,
                    const std::vector<std::string>& models) {
    const absl::Time deadline = absl::Now() + kWait;
    while (node.hosted() != models && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(20));
    }
    return node.hosted() == models;
  }

  WorkerPool pool_{2};
  WorkerPool learning_{2};
};

TEST_F(ClusterNodeTest, AModelIsHostedWhereItIsPlacedAndNamedElsewhere) {
  Server a = Join("server-a:1");
  Server b = Join("server-b:1");
  ASSERT_NE(a.node, nullptr);
  ASSERT_NE(b.node, nullptr);
  ASSERT_TRUE(Retried([&] {
                return a.node->Create(
                    {"arm", absl::FromUnixSeconds(1), BaseConfig(), {}});
              }).ok());
  absl::StatusOr<std::map<std::string, std::vector<std::string>>> placed =
      Retried([&] { return b.node->Placements(); });
  ASSERT_TRUE(placed.ok()) << placed.status();
  ASSERT_EQ(placed->size(), 1u);
  const std::vector<std::string>& servers = placed->at("arm");
  ASSERT_EQ(servers.size(), 1u);
  Server& host = servers[0] == "server-a:1" ? a : b;
  Server& other = servers[0] == "server-a:1" ? b : a;
  EXPECT_TRUE(Hosts(*host.node, {"arm"}));
  EXPECT_TRUE(Hosts(*other.node, {}));
  EXPECT_TRUE(host.registry->FindHere("arm") != nullptr);
  const ClusterNode::Report report = host.node->report();
  ASSERT_EQ(report.hosted.size(), 1u);
  EXPECT_EQ(report.hosted[0].model, "arm");
  // The other server names the model's.
  const absl::Status elsewhere = other.node->Elsewhere("arm");
  EXPECT_TRUE(absl::IsUnavailable(elsewhere)) << elsewhere;
  EXPECT_EQ(ServedBy(elsewhere), servers);
  EXPECT_TRUE(absl::IsNotFound(other.node->Elsewhere("hand")));

  ASSERT_TRUE(Retried([&] { return other.node->Delete("arm"); }).ok());
  EXPECT_TRUE(Hosts(*host.node, {}));
  EXPECT_TRUE(host.registry->FindHere("arm") == nullptr);
  EXPECT_TRUE(absl::IsNotFound(a.node->Delete("arm")));
  EXPECT_TRUE(absl::IsNotFound(other.node->Elsewhere("arm")));
}

}  // namespace
}  // namespace streamreg
