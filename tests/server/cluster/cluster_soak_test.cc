// The cluster under faults (docs/cluster.md): three NATS JetStream nodes and
// three streamreg-server processes in cluster mode on loopback, four
// clients streaming samples (two robots through Learn, two bulk loaders
// through Ingest) and four predicting, all through the list of servers
// (two read the model as it stands, two after what their server
// acknowledged).
// One test kills: each round kills a server with SIGKILL and restarts it
// on its address, then a NATS node likewise. The other pauses: a server,
// then a NATS node, stopped with SIGSTOP for 10 s and continued, each
// fault over once every predictor was answered after it; no read as the
// model stands may wait 8 s for its answer, nor any with the NATS node
// paused (the longest wait after what was acknowledged with the server
// paused is reported). A third puts a slow link (a delaying proxy, 50 ms
// each way) between one server and its only NATS node under the load.
// At the end no acknowledged sample is lost, none is learned twice, every
// replica of each model holds the same count and gives bit-identical
// predictions, equal to the engine fed the same samples, every prediction
// succeeded within its client's retries, and every write is taken within a
// minute of the last fault.
//
// STREAMREG_SOAK_ROUNDS sets the kill rounds (default 3; the standalone run
// of docs/cluster.md uses 20).
#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/lib/client.h"
#include "core/base/mutex.h"
#include "gtest/gtest.h"
#include "server/rpc/spec_conversion.h"
#include "tests/support/delaying_proxy.h"
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

// A soak server's flags, its NATS nodes given as "host:port,...". (Its
// events are logged, for ServerEventsOf.)
std::vector<std::string> SoakServerFlags(const std::string& nats) {
  // The engine references learn the samples alone.
  return {"--cluster=" + nats, "--cluster_replicas=2",
          "--cluster_server_ttl=2s", "--take_over=fixed_count",
          "--log_level=info"};
}

// The last `most` lines of a server's log that name `model`: what a
// failure message shows of how the server hosted and followed it.
std::string ServerEventsOf(const ServerProcess& server,
                           const std::string& model, std::size_t most = 40) {
  std::ifstream log(server.data_dir() + ".log");
  const std::string named = absl::StrCat("model=", model);
  std::deque<std::string> lines;
  for (std::string line; std::getline(log, line);) {
    const std::size_t at = line.find(named);
    const std::size_t after = at + named.size();
    if (at == std::string::npos ||
        (after < line.size() && line[after] != ' ')) {
      continue;
    }
    lines.push_back(line);
    if (lines.size() > most) lines.pop_front();
  }
  return absl::StrCat("\n--- ", server.address(), " on ", model, ":\n",
                      absl::StrJoin(lines, "\n"));
}

v1::ModelSpec SoakSpec() {
  v1::ModelSpec spec;
  spec.set_input_dim(kDim);
  spec.add_target_names("first");
  spec.add_target_names("second");
  return spec;
}

// The cluster, its models and the load on them, for a test to fault.
class ClusterSoakTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<NatsTestCluster>> nats =
        NatsTestCluster::Start();
    ASSERT_TRUE(nats.ok()) << nats.status();
    nats_ = *std::move(nats);
    const std::string nats_urls = absl::StrJoin(nats_->urls(), ",");
    for (std::size_t i = 0; i < kServers; ++i) {
      servers_.push_back(std::make_unique<ServerProcess>(
          STREAMREG_SERVER, FreshDirectory(), SoakServerFlags(nats_urls)));
      ASSERT_NO_FATAL_FAILURE(servers_.back()->Start());
      addresses_.push_back(servers_.back()->address());
    }
    all_ = absl::StrJoin(addresses_, ",");
    Client client(SoakClientOptions(all_));
    for (std::size_t f = 0; f < kFeeds; ++f) {
      auto feed = std::make_unique<Feed>();
      feed->robot = f < 2;
      feed->model = absl::StrCat(feed->robot ? "robot-" : "bulk-", f);
      feed->stream = MakeStream(kSamplesPerModel, 100 + f);
      feed->first_id = (f + 1) * 1'000'000'000ull;
      absl::StatusOr<v1::Model> created =
          client.CreateModel(feed->model, SoakSpec());
      ASSERT_TRUE(created.ok()) << created.status();
      feeds_.push_back(std::move(feed));
    }
  }

  // Streams every feed and predicts from every model until StopLoad().
  void StartLoad() {
    for (auto& feed : feeds_) {
      threads_.Start([this, f = feed.get()] {
        while (!stop_ && f->acknowledged < kSamplesPerModel) {
          Client client(SoakClientOptions(all_));
          const absl::Status status =
              StreamUntilFailure(*f, client, kSamplesPerModel, &stop_);
          if (!status.ok()) {
            ++failed_streams_;
            std::printf("%s: stream failed at %zu: %s\n", f->model.c_str(),
                        f->acknowledged.load(), status.ToString().c_str());
          }
        }
      });
    }
    for (std::size_t p = 0; p < kPredictors; ++p) {
      threads_.Start([this, p] { Predict(p, *feeds_[p % kFeeds]); });
    }
  }

  // What a predictor reads: the model as it stands (min_learned 0), or
  // once every sample its server acknowledged is learned (the default).
  enum ReadKind { kAsItStands = 0, kAfterAcknowledged = 1 };
  static ReadKind KindOf(std::size_t p) {
    return p % 2 == 0 ? kAsItStands : kAfterAcknowledged;
  }

  // Predictor p: predicts from `feed`'s model until stopped, noting the
  // longest wait for an answer of its kind (from the last answer, or from
  // the first call) and when it was last answered.
  void Predict(std::size_t p, const Feed& feed) {
    Client client(SoakClientOptions(all_));
    const ReadKind kind = KindOf(p);
    PredictCallOptions read;
    if (kind == kAsItStands) read.min_learned = 0;
    absl::Time last_answer = absl::InfiniteFuture();
    bool answered = false;
    while (!stop_) {
      if (feed.acknowledged == 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        continue;
      }
      last_answer = std::min(last_answer, absl::Now());
      absl::StatusOr<std::vector<v1::Prediction>> got =
          client.Predict(feed.model, queries_.x, kDim, read);
      if (kind == kAfterAcknowledged &&
          absl::IsDeadlineExceeded(got.status())) {
        // Its server had not learned what it acknowledged by the call's
        // deadline (a backlog after a fault): not answered yet, and asked
        // again; the wait goes on and is what longest_unanswered reports.
        std::printf("prediction still waiting: %s\n",
                    got.status().ToString().c_str());
        continue;
      }
      if (kind == kAsItStands && !answered &&
          absl::IsFailedPrecondition(got.status())) {
        // The first sample acknowledged by one server, a read as the model
        // stands may come to a replica that has not applied it yet (it is
        // not held for it): the model has no samples there yet.
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        continue;
      }
      answered = answered || got.ok();
      ++(got.ok() ? predictions_ : failed_predictions_);
      if (!got.ok()) {
        std::printf("prediction failed: %s\n", got.status().ToString().c_str());
        continue;
      }
      const absl::Time now = absl::Now();
      if (now - last_answer > absl::Seconds(1)) {
        std::printf(
            "%s: %s without a prediction of %s, until %s\n", feed.model.c_str(),
            absl::FormatDuration(now - last_answer).c_str(), feed.model.c_str(),
            absl::FormatTime("%H:%M:%E3S", now, absl::UTCTimeZone()).c_str());
      }
      {
        MutexLock lock(&longest_mutex_);
        longest_unanswered_[kind] =
            std::max(longest_unanswered_[kind], now - last_answer);
      }
      last_answer = now;
      last_answers_[p].store(absl::ToUnixNanos(now));
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

  absl::Duration longest_unanswered(ReadKind kind) {
    MutexLock lock(&longest_mutex_);
    return longest_unanswered_[kind];
  }
  void ResetLongestUnanswered() {
    MutexLock lock(&longest_mutex_);
    longest_unanswered_.fill(absl::ZeroDuration());
  }
  // Waits (at most a minute) until every predictor has had an answer
  // after `since`: a wait that began in one fault ends before the next.
  void WaitUntilEveryPredictorIsAnsweredAfter(absl::Time since) {
    const absl::Time deadline = absl::Now() + absl::Minutes(1);
    for (const std::atomic<std::int64_t>& last : last_answers_) {
      while (absl::FromUnixNanos(last.load()) <= since &&
             absl::Now() < deadline) {
        absl::SleepFor(absl::Milliseconds(10));
      }
    }
  }

  // Stops the load; then, with the faults over, sends again what was not
  // acknowledged, and checks that every model holds exactly what its feed
  // sent, learned as the engine learns it, on both of its replicas.
  void StopLoadAndVerify(absl::string_view faults) {
    threads_.StopAndJoin();
    // Whatever was sent is sent again until acknowledged, so each model
    // should hold exactly samples [0, sent) in order.
    // With the faults over, the cluster takes every write within a minute.
    std::size_t acknowledged_under_faults = 0;
    const absl::Time recovered_by = absl::Now() + absl::Minutes(1);
    for (auto& feed : feeds_) {
      acknowledged_under_faults += feed->acknowledged;
      Client client(SoakClientOptions(all_));
      while (feed->acknowledged < feed->sent && absl::Now() < recovered_by) {
        StreamUntilFailure(*feed, client, feed->sent).IgnoreError();
      }
      ASSERT_EQ(feed->acknowledged, feed->sent) << feed->model;
    }
    std::printf(
        "%s: %zu samples acknowledged under faults, %llu predictions "
        "(longest wait for one %s as the model stands, %s after what was "
        "acknowledged); failed after retries: %llu predictions, "
        "%llu streams\n",
        std::string(faults).c_str(), acknowledged_under_faults,
        static_cast<unsigned long long>(predictions_.load()),
        absl::FormatDuration(longest_unanswered(kAsItStands)).c_str(),
        absl::FormatDuration(longest_unanswered(kAfterAcknowledged)).c_str(),
        static_cast<unsigned long long>(failed_predictions_.load()),
        static_cast<unsigned long long>(failed_streams_.load()));
    EXPECT_GT(acknowledged_under_faults, 1000u) << "the streams hardly ran";
    EXPECT_GT(predictions_.load(), 100u);
    EXPECT_EQ(failed_predictions_.load(), 0u);
    // A stream whose client spent its retries (24 attempts, 10 s each) is
    // opened again by its feed, resending what was not acknowledged:
    // counted and reported, not a loss (what the feeds acknowledged is
    // checked below). Seen only in the 20-round run on a loaded machine.

    // Every replica: the count sent, and the engine's predictions.
    const ModelConfig config = *ConfigFromSpec(SoakSpec());
    for (auto& feed : feeds_) {
      SCOPED_TRACE(feed->model);
      const std::size_t n = feed->sent;
      auto reference = MakeModel(config);
      LearnAll(*reference, feed->stream, 0, n, 500);
      // The servers that serve it answer themselves (the others name its
      // servers, and one still setting it up says to retry): wait until
      // both of its replicas answer with every sample. A replica that
      // replayed its log after the faults learns it beside the others on
      // two cores (on a loaded machine, up to a minute).
      std::vector<std::string> replicas;
      std::string seen;  // what each server answered last
      const absl::Time deadline = absl::Now() + absl::Seconds(60);
      while (replicas.size() < 2 && absl::Now() < deadline) {
        replicas.clear();
        seen.clear();
        for (const std::string& address : addresses_) {
          ClientOptions options = SoakClientOptions(address);
          options.retry.max_attempts = 1;
          absl::StatusOr<v1::Model> info =
              Client(options).GetModel(feed->model);
          if (info.ok() && info->stats().num_samples() == n) {
            replicas.push_back(address);
          }
          absl::StrAppend(
              &seen, "; ", address, ": ",
              info.ok()
                  ? absl::StrCat(info->stats().num_samples(), " samples, ",
                                 info->stats().learn_backlog(), " queued")
                  : info.status().ToString());
        }
        if (replicas.size() < 2) absl::SleepFor(absl::Milliseconds(100));
      }
      if (replicas.size() < 2) {
        for (const auto& server : servers_) {
          seen += ServerEventsOf(*server, feed->model);
        }
      }
      ASSERT_EQ(replicas.size(), 2u)
          << "replicas with all " << n << " samples" << seen;
      for (const std::string& address : replicas) {
        ClientOptions options = SoakClientOptions(address);
        options.retry.max_attempts = 1;
        Client client(options);
        SCOPED_TRACE(address);
        ASSERT_NO_FATAL_FAILURE(ExpectServedPredictionsOf(
            client, feed->model, *reference, queries_));
      }
    }
  }

  void WaitUntilEveryFeedIsAcknowledged() {
    const absl::Time deadline = absl::Now() + absl::Minutes(1);
    for (auto& feed : feeds_) {
      while (feed->acknowledged == 0 && absl::Now() < deadline) {
        absl::SleepFor(absl::Milliseconds(10));
      }
      ASSERT_GT(feed->acknowledged, 0u) << feed->model;
    }
  }

  std::unique_ptr<NatsTestCluster> nats_;
  std::vector<std::unique_ptr<ServerProcess>> servers_;
  std::vector<std::string> addresses_;
  std::string all_;
  std::vector<std::unique_ptr<Feed>> feeds_;
  const Stream queries_ = MakeStream(10, 99);

  std::atomic<bool> stop_ = false;
  std::atomic<std::uint64_t> predictions_ = 0, failed_predictions_ = 0;
  std::atomic<std::uint64_t> failed_streams_ = 0;
  std::array<std::atomic<std::int64_t>, kPredictors> last_answers_{};
  Mutex longest_mutex_;
  std::array<absl::Duration, 2> longest_unanswered_
      ABSL_GUARDED_BY(longest_mutex_){};
  FeedThreads threads_{&stop_};  // last: stopped first
};

TEST_F(ClusterSoakTest, NoAcknowledgedSampleIsLostThroughKills) {
  StartLoad();
  std::mt19937 random(7);
  std::uniform_int_distribution<int> pause_ms(200, 800);
  std::uniform_int_distribution<std::size_t> pick(0, kServers - 1);
  const int rounds = Rounds();
  absl::Time round_start = absl::Now();
  for (int round = 0; round < rounds; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms(random)));
    const std::size_t server = pick(random);
    servers_[server]->Kill();
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms(random)));
    ASSERT_NO_FATAL_FAILURE(servers_[server]->Start());
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms(random)));
    const std::size_t node = pick(random) % nats_->size();
    nats_->Kill(node);
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms(random)));
    absl::Status restarted = nats_->Restart(node);
    ASSERT_TRUE(restarted.ok()) << restarted;
    std::printf(
        "round %d (%.1f s): killed server %zu and NATS node %zu; acknowledged",
        round, absl::ToDoubleSeconds(absl::Now() - round_start), server, node);
    round_start = absl::Now();
    for (auto& feed : feeds_) std::printf(" %zu", feed->acknowledged.load());
    std::printf("\n");
  }
  ASSERT_NO_FATAL_FAILURE(StopLoadAndVerify(absl::StrCat(
      rounds, " rounds (", rounds, " server and ", rounds, " NATS kills)")));
}

// A paused process holds its connections open and answers nothing: the
// clients must leave a paused server for another replica of the model, and
// the servers a paused NATS node for another node, rather than wait for
// the pause to end.
TEST_F(ClusterSoakTest, ReadsGoOnThroughPausedProcesses) {
  constexpr absl::Duration kPause = absl::Seconds(10);
  StartLoad();
  ASSERT_NO_FATAL_FAILURE(WaitUntilEveryFeedIsAcknowledged());
  absl::SleepFor(absl::Seconds(1));
  // The longest waits of each kind of read through one fault.
  auto waits_through = [&](const std::function<void()>& pause,
                           const std::function<void()>& resume) {
    ResetLongestUnanswered();
    pause();
    absl::SleepFor(kPause);
    resume();
    absl::SleepFor(absl::Seconds(3));
    WaitUntilEveryPredictorIsAnsweredAfter(absl::Now());
    return std::array<absl::Duration, 2>{
        longest_unanswered(kAsItStands),
        longest_unanswered(kAfterAcknowledged)};
  };
  const std::array<absl::Duration, 2> server_paused = waits_through(
      [&] { servers_[1]->Pause(); }, [&] { servers_[1]->Resume(); });
  const std::array<absl::Duration, 2> node_paused =
      waits_through([&] { nats_->Pause(1); }, [&] { nats_->Resume(1); });
  std::printf(
      "longest wait for a prediction as the model stands: %s with a server "
      "paused, %s with a NATS node paused; after what its server "
      "acknowledged: %s and %s\n",
      absl::FormatDuration(server_paused[kAsItStands]).c_str(),
      absl::FormatDuration(node_paused[kAsItStands]).c_str(),
      absl::FormatDuration(server_paused[kAfterAcknowledged]).c_str(),
      absl::FormatDuration(node_paused[kAfterAcknowledged]).c_str());
  // The target is 3 s (bench/cluster_faults.sh measures it on a quiet
  // machine); on a machine running other tests beside this one a bound
  // well below the pause still says that no read waited for it to end.
  EXPECT_LT(server_paused[kAsItStands], absl::Seconds(8));
  EXPECT_LT(node_paused[kAsItStands], absl::Seconds(8));
  // A read after what its server acknowledged waits until that server has
  // learned it, which a fault can hold up past its end: with a server
  // paused, the two others take its share of the writes and replay the
  // models moved to them, on the same two cores (2.1 to 12.1 s measured;
  // 1.1 to 5.5 s since the MLKR fit such a read waits for is raised; 0.6
  // to 1.1 s in nine runs since reads are hedged, against 0.5 to 9.5 s
  // in nine of the same session without);
  // with a NATS node paused, a follower whose consumer was on it waits
  // for a new one (up to 8.8 s seen in CI). Not bounded by the 3 s target
  // yet (docs/cluster.md, "Still to build"): reported, and bounded only by
  // the cluster's recovery, every such read answered within 10 s of the
  // fault's end.
  EXPECT_LT(server_paused[kAfterAcknowledged], kPause + absl::Seconds(10));
  EXPECT_LT(node_paused[kAfterAcknowledged], kPause + absl::Seconds(10));
  ASSERT_NO_FATAL_FAILURE(
      StopLoadAndVerify("a server, then a NATS node, paused for 10 s"));
}

// A slow link: the first server of the clients' list restarted in place
// with a delaying proxy (50 ms each way) as its only way to the NATS
// cluster, then the whole load for 15 s. Its appends and its followers'
// deliveries take 100 ms more; nothing acknowledged may be lost, the
// replicas stay alike, and a read as the model stands never waits for
// the link.
TEST_F(ClusterSoakTest, ASlowLinkToOneServerLosesNothing) {
  absl::StatusOr<std::unique_ptr<DelayingProxy>> proxy =
      DelayingProxy::Start(nats_->urls()[0], absl::Milliseconds(50));
  ASSERT_TRUE(proxy.ok()) << proxy.status();
  servers_[0]->Kill();
  servers_[0]->SetFlags(SoakServerFlags((*proxy)->address()));
  ASSERT_NO_FATAL_FAILURE(servers_[0]->Start());
  StartLoad();
  ASSERT_NO_FATAL_FAILURE(WaitUntilEveryFeedIsAcknowledged());
  ResetLongestUnanswered();
  absl::SleepFor(absl::Seconds(15));
  WaitUntilEveryPredictorIsAnsweredAfter(absl::Now());
  std::printf(
      "slow link: longest wait for a prediction as the model stands %s, "
      "after what its server acknowledged %s\n",
      absl::FormatDuration(longest_unanswered(kAsItStands)).c_str(),
      absl::FormatDuration(longest_unanswered(kAfterAcknowledged)).c_str());
  EXPECT_LT(longest_unanswered(kAsItStands), absl::Seconds(8));
  ASSERT_NO_FATAL_FAILURE(StopLoadAndVerify(
      "a server behind a slow link (50 ms each way) for 15 s"));
}

}  // namespace
}  // namespace streamreg
