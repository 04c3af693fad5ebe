#ifndef STREAMREG_TESTS_SUPPORT_NATS_CLUSTER_TEST_H_
#define STREAMREG_TESTS_SUPPORT_NATS_CLUSTER_TEST_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "server/cluster/jetstream_client.h"
#include "server/cluster/retried_until.h"
#include "tests/support/nats_test_cluster.h"

namespace streamreg {

// The cluster tests' fixture: a fresh three-node NATS JetStream cluster per
// test (cluster_) and a client of all its nodes (client_), more clients of
// it, and the retries a client of a cluster makes while it elects leaders.
class NatsClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<NatsTestCluster>> cluster =
        NatsTestCluster::Start();
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = *std::move(cluster);
    client_ = Connect(cluster_->urls());
    ASSERT_NE(client_, nullptr);
  }

  // A client of `servers` (and of the other nodes, unless
  // `only_listed_servers`), with a 2 s request timeout; null (and a test
  // failure) if it cannot connect.
  static std::unique_ptr<JetStreamClient> Connect(
      std::vector<std::string> servers, bool only_listed_servers = false) {
    JetStreamClient::Options options;
    options.servers = std::move(servers);
    options.only_listed_servers = only_listed_servers;
    options.request_timeout = absl::Seconds(2);
    absl::StatusOr<std::unique_ptr<JetStreamClient>> client =
        JetStreamClient::Connect(options);
    EXPECT_TRUE(client.ok()) << client.status();
    return client.ok() ? *std::move(client) : nullptr;
  }

  // `call()` (a Status or StatusOr), again while it answers UNAVAILABLE,
  // for up to 30 s.
  template <class Call>
  static auto Retried(const Call& call) {
    return RetriedUntil(absl::Now() + absl::Seconds(30), call);
  }

  std::unique_ptr<NatsTestCluster> cluster_;
  std::unique_ptr<JetStreamClient> client_;
};

}  // namespace streamreg

#endif  // STREAMREG_TESTS_SUPPORT_NATS_CLUSTER_TEST_H_
