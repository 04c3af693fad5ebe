// The table of the replicas a server hosts: in name order, taken out once,
// and those it snapshots picked out.
#include "server/cluster/hosted_replicas.h"

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/hosting/worker_pool.h"
#include "tests/support/cluster_parts.h"
#include "tests/support/model_test_support.h"
#include "tests/support/nats_cluster_test.h"

namespace streamreg {
namespace {

class HostedReplicasTest : public NatsClusterTest {
 protected:
  std::shared_ptr<HostedReplica> Replica(const std::string& name) {
    std::shared_ptr<HostedModel> model =
        HostedModelOf(name, BaseConfig(), {&pool_, &pool_});
    models_.push_back(model);
    return std::make_shared<HostedReplica>(
        LogStream::Attach(*client_, name, {}),
        SnapshotStore::Open(*client_, name, {}), model, 1,
        ReplicatedLog::Options{.writer = "server-a/1"});
  }

  WorkerPool pool_{1};
  std::vector<std::shared_ptr<HostedModel>> models_;
};

TEST_F(HostedReplicasTest, KeepsThemByNameAndPicksThoseSnapshottedHere) {
  HostedReplicas replicas;
  const std::shared_ptr<HostedReplica> leg = Replica("leg");
  const std::shared_ptr<HostedReplica> arm = Replica("arm");
  replicas.Add("leg", leg);
  replicas.Add("arm", arm);
  arm->snapshots_here = true;
  EXPECT_TRUE(replicas.Contains("arm"));
  EXPECT_FALSE(replicas.Contains("hand"));
  std::vector<std::string> names;
  for (const auto& [name, replica] : replicas.All()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"arm", "leg"}));
  EXPECT_EQ(replicas.SnapshottedHere(),
            std::vector<std::shared_ptr<HostedReplica>>{arm});

  EXPECT_EQ(replicas.Take("arm"), arm);
  EXPECT_EQ(replicas.Take("arm"), nullptr);
  EXPECT_FALSE(replicas.Contains("arm"));
  EXPECT_TRUE(replicas.SnapshottedHere().empty());
  EXPECT_EQ(replicas.All().size(), 1u);
}

}  // namespace
}  // namespace streamreg
