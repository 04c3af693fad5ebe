// The crash test: streamreg-server as a subprocess, killed with SIGKILL at
// random moments while C++ clients stream into it from several concurrent
// streams (two robots through Learn, two bulk loaders through Ingest),
// restarted on the same data directory each time. After each restart the
// models hold every sample reported durable before the kill; at the end
// every sample sent — those answered but not yet durable at a kill were
// sent again — is in its model exactly once (count and ids), and
// predictions equal those of a model fed the same samples without a
// crash. Both sync policies.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/lib/client.h"
#include "client/lib/ingester.h"
#include "client/lib/learn_session.h"
#include "gtest/gtest.h"
#include "server/rpc/spec_conversion.h"
#include "tests/support/model_test_support.h"
#include "tests/support/sample_feed.h"
#include "tests/support/server_process.h"
#include "tests/support/service_test_support.h"

namespace streamreg {
namespace {

constexpr int kKills = 22;
constexpr std::size_t kSamplesPerModel = 200'000;  // more than get sent

class CrashTest : public ::testing::TestWithParam<const char*> {};

TEST_P(CrashTest, EveryAcknowledgedSampleSurvivesKills) {
  const std::string data_dir = FreshDirectory();
  ServerProcess server(
      STREAMREG_SERVER, data_dir,
      {absl::StrCat("--sync=", GetParam()), "--snapshot_every_samples=1000",
       "--wal_segment_bytes=262144",
       // The references learn the samples alone (the robots' Learn
       // streams would take their work over where the log records it).
       "--take_over=fixed_count", "--log_level=warn"});
  ASSERT_NO_FATAL_FAILURE(server.Start());

  v1::ModelSpec spec;
  spec.set_input_dim(kDim);
  spec.add_target_names("first");
  spec.add_target_names("second");
  spec.set_metric(v1::METRIC_EGOP);
  std::vector<std::unique_ptr<Feed>> feeds;
  for (int f = 0; f < 4; ++f) {
    auto feed = std::make_unique<Feed>();
    feed->robot = f < 2;
    feed->model = absl::StrCat(feed->robot ? "robot-" : "bulk-", f);
    feed->stream = MakeStream(kSamplesPerModel, 100 + f);
    feed->first_id = (f + 1) * 1'000'000'000ull;
    Client client(KillTestClientOptions(server.address()));
    ASSERT_TRUE(client.CreateModel(feed->model, spec).ok());
    feeds.push_back(std::move(feed));
  }

  // Streams run until told to stop, reconnecting after every kill.
  std::atomic<bool> stop = false;
  // Every restart listens on the port of the first start.
  const std::string address = server.address();
  // Joined however the test ends (a failed restart returns early).
  FeedThreads streams(&stop);
  for (auto& feed : feeds) {
    streams.Start([&, f = feed.get()] {
      while (!stop && f->acknowledged < kSamplesPerModel) {
        StreamUntilFailure(*f, address, kSamplesPerModel, &stop).IgnoreError();
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    });
  }
  std::mt19937 random(7);
  std::uniform_int_distribution<int> pause_ms(100, 500);
  // Robots' samples sent (answered, or on their way) and not yet reported
  // durable when the server was killed, summed over the kills: each must
  // come back recovered or be sent again, and none be learned twice.
  std::size_t answered_not_durable = 0;
  for (int kill = 0; kill < kKills; ++kill) {
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms(random)));
    EXPECT_TRUE(server.Kill())
        << "the server had ended by itself; see " << data_dir << ".log";
    // Read after the kill: every report counted came before it.
    std::vector<std::size_t> durable_at_kill;
    std::printf("kill %d:", kill);
    for (auto& feed : feeds) {
      durable_at_kill.push_back(feed->acknowledged.load());
      if (feed->robot)
        answered_not_durable += feed->sent - durable_at_kill.back();
      std::printf(" %zu", durable_at_kill.back());
    }
    std::printf("\n");
    ASSERT_NO_FATAL_FAILURE(server.Start());
    // Everything reported durable before the kill was recovered.
    Client client(KillTestClientOptions(server.address()));
    for (std::size_t f = 0; f < feeds.size(); ++f) {
      absl::StatusOr<v1::Model> model = client.GetModel(feeds[f]->model);
      ASSERT_TRUE(model.ok()) << model.status();
      EXPECT_GE(model->stats().num_samples(), durable_at_kill[f])
          << feeds[f]->model << " lost samples reported durable at kill "
          << kill;
    }
  }
  streams.StopAndJoin();
  std::printf("robot samples answered and not yet durable at the kills: %zu\n",
              answered_not_durable);
  EXPECT_GT(answered_not_durable, 0u)
      << "no kill found an answered sample that was not durable yet";

  // Everything ever sent is now sent again until acknowledged, so each
  // model should hold exactly samples [0, sent) in order.
  std::size_t total_acknowledged_before = 0;
  for (auto& feed : feeds) {
    total_acknowledged_before += feed->acknowledged;
    while (feed->acknowledged < feed->sent) {
      StreamUntilFailure(*feed, server.address(), feed->sent).IgnoreError();
    }
  }
  EXPECT_GT(total_acknowledged_before, 2000u) << "the streams hardly ran";
  for (auto& feed : feeds) {
    std::printf("%s: %zu samples sent\n", feed->model.c_str(),
                feed->sent.load());
  }
  EXPECT_TRUE(server.Kill());  // one more crash before checking
  ASSERT_NO_FATAL_FAILURE(server.Start());

  Client client(KillTestClientOptions(server.address()));
  const Stream queries = MakeStream(25, 99);
  ModelConfig config = *ConfigFromSpec(spec);
  for (auto& feed : feeds) {
    SCOPED_TRACE(feed->model);
    const std::size_t n = feed->sent;
    absl::StatusOr<v1::Model> model = client.GetModel(feed->model);
    ASSERT_TRUE(model.ok()) << model.status();
    EXPECT_EQ(model->stats().num_samples(), n);  // none lost, none twice
    // Every id is known: sending all of them again learns nothing.
    Feed again;
    again.model = feed->model;
    again.robot = false;
    again.stream = feed->stream;
    again.first_id = feed->first_id;
    StreamUntilFailure(again, server.address(), n).IgnoreError();
    ASSERT_EQ(again.acknowledged, n);
    EXPECT_EQ(client.GetModel(feed->model)->stats().num_samples(), n);
    // Predictions of a model fed the same samples that never crashed.
    auto reference = MakeModel(config);
    LearnAll(*reference, feed->stream, 0, n, 500);
    ASSERT_NO_FATAL_FAILURE(
        ExpectServedPredictionsOf(client, feed->model, *reference, queries));
  }
  std::filesystem::remove_all(data_dir);
  std::filesystem::remove(data_dir + ".log");
}

INSTANTIATE_TEST_SUITE_P(SyncPolicies, CrashTest,
                         ::testing::Values("always", "interval:5"),
                         [](const auto& info) {
                           return std::string(
                               info.param[0] == 'a' ? "Always" : "Interval5ms");
                         });

}  // namespace
}  // namespace streamreg
