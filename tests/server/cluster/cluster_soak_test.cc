// The cluster under faults (docs/cluster.md): three NATS JetStream nodes and
// three streamreg-server processes in cluster mode on loopback, four
// clients streaming samples (two robots through Learn, two bulk loaders
// through Ingest) and four predicting, all through the list of servers.
// Each round kills a server with SIGKILL and restarts it on its address,
// then a NATS node likewise. At the end no acknowledged sample is lost,
// none is learned twice, every replica of each model holds the same count
// and gives bit-identical predictions, equal to the engine fed the same
// samples, every prediction succeeded within its client's retries, and
// every write is taken within a minute of the last fault.
//
// STREAMREG_SOAK_ROUNDS sets the rounds (default 3; the standalone run of
// docs/cluster.md uses 20).
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/lib/client.h"
#include "gtest/gtest.h"
#include "server/rpc/spec_conversion.h"
#include "tests/support/fresh_directory.h"
#include "tests/support/model_test_support.h"
#include "tests/support/nats_test_cluster.h"
#include "tests/support/sample_feed.h"
#include "tests/support/server_process.h"

namespace streamreg {
namespace {

constexpr std::size_t kServers = 3;
constexpr std::size_t kFeeds = 4;
constexpr std::size_t kPredictors = 4;
constexpr std::size_t kSamplesPerModel = 200'000;  // more than get sent

int Rounds() {
  const char* rounds = std::getenv("STREAMREG_SOAK_ROUNDS");
  return rounds != nullptr ? std::atoi(rounds) : 3;
}

// A client of every server that reconnects on a fresh connection and
// retries long enough to ride out a server's restart and an election:
// about 20 s of backoff (12 attempts, about 8 s, were once outlasted by a
// model "being set up" on a restarted server while the accuracy
// comparisons ran beside this test on two cores).
ClientOptions SoakClientOptions(const std::string& servers) {
  ClientOptions options;
  options.address = servers;
  options.timeout = absl::Seconds(10);
  options.batch_size = 40;
  options.own_connection = true;
  options.retry.max_attempts = 24;
  options.retry.initial_backoff = absl::Milliseconds(50);
  options.retry.max_backoff = absl::Seconds(1);
  return options;
}

v1::ModelSpec SoakSpec() {
  v1::ModelSpec spec;
  spec.set_input_dim(kDim);
  spec.add_target_names("first");
  spec.add_target_names("second");
  return spec;
}

TEST(ClusterSoakTest, NoAcknowledgedSampleIsLostThroughKills) {
  absl::StatusOr<std::unique_ptr<NatsTestCluster>> nats =
      NatsTestCluster::Start();
  ASSERT_TRUE(nats.ok()) << nats.status();
  const std::string nats_urls = absl::StrJoin((*nats)->urls(), ",");
  std::vector<std::unique_ptr<ServerProcess>> servers;
  std::vector<std::string> addresses;
  for (std::size_t i = 0; i < kServers; ++i) {
    servers.push_back(std::make_unique<ServerProcess>(
        STREAMREG_SERVER, FreshDirectory(),
        std::vector<std::string>{
            "--cluster=" + nats_urls, "--cluster_replicas=2",
            "--cluster_server_ttl=2s", "--log_level=warn"}));
    ASSERT_NO_FATAL_FAILURE(servers.back()->Start());
    addresses.push_back(servers.back()->address());
  }
  const std::string all = absl::StrJoin(addresses, ",");

  std::vector<std::unique_ptr<Feed>> feeds;
  {
    Client client(SoakClientOptions(all));
    for (std::size_t f = 0; f < kFeeds; ++f) {
      auto feed = std::make_unique<Feed>();
      feed->robot = f < 2;
      feed->model = absl::StrCat(feed->robot ? "robot-" : "bulk-", f);
      feed->stream = MakeStream(kSamplesPerModel, 100 + f);
      feed->first_id = (f + 1) * 1'000'000'000ull;
      absl::StatusOr<v1::Model> created =
          client.CreateModel(feed->model, SoakSpec());
      ASSERT_TRUE(created.ok()) << created.status();
      feeds.push_back(std::move(feed));
    }
  }

  std::atomic<bool> stop = false;
  std::atomic<std::uint64_t> predictions = 0, failed_predictions = 0;
  std::atomic<std::uint64_t> failed_streams = 0;
  FeedThreads threads(&stop);
  for (auto& feed : feeds) {
    threads.Start([&, f = feed.get()] {
      while (!stop && f->acknowledged < kSamplesPerModel) {
        Client client(SoakClientOptions(all));
        const absl::Status status =
            StreamUntilFailure(*f, client, kSamplesPerModel, &stop);
        if (!status.ok()) {
          ++failed_streams;
          std::printf("%s: stream failed at %zu: %s\n", f->model.c_str(),
                      f->acknowledged.load(), status.ToString().c_str());
        }
      }
    });
  }
  const Stream queries = MakeStream(10, 99);
  for (std::size_t p = 0; p < kPredictors; ++p) {
    threads.Start([&, p] {
      Client client(SoakClientOptions(all));
      const Feed& feed = *feeds[p % kFeeds];
      while (!stop) {
        if (feed.acknowledged == 0) {
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
          continue;
        }
        absl::StatusOr<std::vector<v1::Prediction>> got =
            client.Predict(feed.model, queries.x, kDim);
        ++(got.ok() ? predictions : failed_predictions);
        if (!got.ok()) {
          std::printf("prediction failed: %s\n",
                      got.status().ToString().c_str());
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    });
  }

  std::mt19937 random(7);
  std::uniform_int_distribution<int> pause_ms(200, 800);
  std::uniform_int_distribution<std::size_t> pick(0, kServers - 1);
  const int rounds = Rounds();
  absl::Time round_start = absl::Now();
  for (int round = 0; round < rounds; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms(random)));
    const std::size_t server = pick(random);
    servers[server]->Kill();
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms(random)));
    ASSERT_NO_FATAL_FAILURE(servers[server]->Start());
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms(random)));
    const std::size_t node = pick(random) % (*nats)->size();
    (*nats)->Kill(node);
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms(random)));
    absl::Status restarted = (*nats)->Restart(node);
    ASSERT_TRUE(restarted.ok()) << restarted;
    std::printf(
        "round %d (%.1f s): killed server %zu and NATS node %zu; acknowledged",
        round, absl::ToDoubleSeconds(absl::Now() - round_start), server, node);
    round_start = absl::Now();
    for (auto& feed : feeds) std::printf(" %zu", feed->acknowledged.load());
    std::printf("\n");
  }
  threads.StopAndJoin();

  // Whatever was sent is sent again until acknowledged, so each model
  // should hold exactly samples [0, sent) in order.
  // With the faults over, the cluster takes every write within a minute.
  std::size_t acknowledged_under_faults = 0;
  const absl::Time recovered_by = absl::Now() + absl::Minutes(1);
  for (auto& feed : feeds) {
    acknowledged_under_faults += feed->acknowledged;
    Client client(SoakClientOptions(all));
    while (feed->acknowledged < feed->sent && absl::Now() < recovered_by) {
      StreamUntilFailure(*feed, client, feed->sent).IgnoreError();
    }
    ASSERT_EQ(feed->acknowledged, feed->sent) << feed->model;
  }
  std::printf(
      "%d rounds (%d server and %d NATS kills): %zu samples acknowledged "
      "under faults, %llu predictions; failed after retries: %llu "
      "predictions, %llu streams\n",
      rounds, rounds, rounds, acknowledged_under_faults,
      static_cast<unsigned long long>(predictions.load()),
      static_cast<unsigned long long>(failed_predictions.load()),
      static_cast<unsigned long long>(failed_streams.load()));
  EXPECT_GT(acknowledged_under_faults, 1000u) << "the streams hardly ran";
  EXPECT_GT(predictions.load(), 100u);
  EXPECT_EQ(failed_predictions.load(), 0u);
  // A stream whose client spent its retries (24 attempts, 10 s each) is
  // opened again by its feed, resending what was not acknowledged: counted
  // and reported, not a loss (what the feeds acknowledged is checked
  // below). Seen only in the 20-round run on a loaded machine.

  // Every replica: the count sent, and the engine's predictions.
  const ModelConfig config = *ConfigFromSpec(SoakSpec());
  for (auto& feed : feeds) {
    SCOPED_TRACE(feed->model);
    const std::size_t n = feed->sent;
    auto reference = MakeModel(config);
    LearnAll(*reference, feed->stream, 0, n, 500);
    // The servers that serve it answer themselves (the others name its
    // servers, and one still setting it up says to retry): wait until both
    // of its replicas answer with every sample.
    std::vector<std::string> replicas;
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    while (replicas.size() < 2 && absl::Now() < deadline) {
      replicas.clear();
      for (const std::string& address : addresses) {
        ClientOptions options = SoakClientOptions(address);
        options.retry.max_attempts = 1;
        absl::StatusOr<v1::Model> info = Client(options).GetModel(feed->model);
        if (info.ok() && info->stats().num_samples() == n) {
          replicas.push_back(address);
        }
      }
      if (replicas.size() < 2) absl::SleepFor(absl::Milliseconds(100));
    }
    ASSERT_EQ(replicas.size(), 2u) << "replicas with all " << n << " samples";
    for (const std::string& address : replicas) {
      ClientOptions options = SoakClientOptions(address);
      options.retry.max_attempts = 1;
      Client client(options);
      SCOPED_TRACE(address);
      ASSERT_NO_FATAL_FAILURE(
          ExpectServedPredictionsOf(client, feed->model, *reference, queries));
    }
  }
}

}  // namespace
}  // namespace streamreg
