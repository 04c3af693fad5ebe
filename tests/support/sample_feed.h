#ifndef STREAMREG_TESTS_SUPPORT_SAMPLE_FEED_H_
#define STREAMREG_TESTS_SUPPORT_SAMPLE_FEED_H_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "client/lib/client.h"
#include "client/lib/ingester.h"
#include "client/lib/learn_session.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/support/model_test_support.h"

namespace streamreg {

// One model's stream of samples, as the tests that kill servers send it,
// and how far it was acknowledged: a robot's through Learn, a bulk
// loader's through Ingest. Sample s has the id first_id + s.
struct Feed {
  std::string model;
  bool robot = false;
  Stream stream;
  std::uint64_t first_id = 0;
  std::atomic<std::size_t> acknowledged{0};  // a prefix of the stream
  std::atomic<std::size_t> sent{0};          // the farthest sent
  std::atomic<std::size_t> disconnects{0};   // streams dropped mid-way
};

// Streams `feed` through `client` from its first unacknowledged sample up
// to `end`; returns when done or once *stop (OK), or with the error of a
// call that failed (after the client's retries). A client that disconnects
// mid-stream gives `abandon_at`: on reaching that sample it drops the
// stream without closing it (the server sees it cancelled) and returns
// CANCELLED.
inline absl::Status StreamUntilFailure(
    Feed& feed, Client& client, std::size_t end,
    const std::atomic<bool>* stop = nullptr,
    std::size_t abandon_at = std::numeric_limits<std::size_t>::max()) {
  auto stopping = [stop] { return stop != nullptr && stop->load(); };
  const auto abandoned = [] {
    return absl::CancelledError("the client disconnected mid-stream");
  };
  const Stream& s = feed.stream;
  std::size_t next = feed.acknowledged.load();
  if (feed.robot) {
    // Acknowledged is what the server's watermark reports durable (its
    // answers come first): a prefix of what this session sent.
    LearnSession session(&client, feed.model);
    const std::size_t first = next;
    for (; next < end && !stopping(); ++next) {
      if (next == abandon_at) return abandoned();
      feed.sent = std::max(feed.sent.load(), next + 1);
      const Sample sample = s.sample(next);
      absl::StatusOr<v1::LearnResponse> learned =
          session.Learn(sample.x, sample.y, feed.first_id + next);
      if (!learned.ok()) return learned.status();
      feed.acknowledged = first + session.durable_samples();
      // A robot's pace (about 1 kHz with the round trip), so that the
      // kills find it streaming.
      std::this_thread::sleep_for(std::chrono::microseconds(300));
    }
    // What Close could not make durable is streamed again from
    // `acknowledged` by the caller's next call.
    (void)session.Close();
    feed.acknowledged = first + session.durable_samples();
    return absl::OkStatus();
  }
  Ingester ingester(&client, feed.model);
  const std::size_t start = next;
  for (; next < end && !stopping(); ++next) {
    if (next == abandon_at) return abandoned();
    feed.sent = std::max(feed.sent.load(), next + 1);
    const Sample sample = s.sample(next);
    if (absl::Status added =
            ingester.Add(sample.x, sample.y, feed.first_id + next);
        !added.ok()) {
      return added;
    }
    feed.acknowledged = start + ingester.acknowledged();
    if (next % 40 == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(15));
    }
  }
  absl::StatusOr<IngestSummary> finished = ingester.Finish();
  if (!finished.ok()) return finished.status();
  feed.acknowledged = next;
  return absl::OkStatus();
}

// The client options of the tests that kill servers: short deadlines, small
// batches and quick retries, so that a stream notices a kill at once.
inline ClientOptions KillTestClientOptions(const std::string& address) {
  ClientOptions options;
  options.address = address;
  options.timeout = absl::Seconds(5);
  options.batch_size = 40;
  options.retry.max_attempts = 3;
  options.retry.initial_backoff = absl::Milliseconds(20);
  return options;
}

// A channel that reconnects within milliseconds of the server's restart
// (gRPC's default backoff grows to minutes) and shares no connection with
// channels before it.
inline std::shared_ptr<grpc::Channel> FastReconnectChannel(
    const std::string& address) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 20);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 20);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(),
                                   args);
}

// StreamUntilFailure over a connection of its own.
inline absl::Status StreamUntilFailure(
    Feed& feed, const std::string& address, std::size_t end,
    const std::atomic<bool>* stop = nullptr,
    std::size_t abandon_at = std::numeric_limits<std::size_t>::max()) {
  Client client(FastReconnectChannel(address), KillTestClientOptions(address));
  return StreamUntilFailure(feed, client, end, stop, abandon_at);
}

// How many of `queries` `client` predicts with `model` differently, in any
// bit, from the engine model `reference` (the tests that kill servers
// compare a served model with one fed the same samples that never crashed).
inline absl::StatusOr<std::size_t> CountServedPredictionsDiffering(
    Client& client, const std::string& model, const Model& reference,
    const Stream& queries) {
  absl::StatusOr<std::vector<v1::Prediction>> got =
      client.Predict(model, queries.x, kDim);
  if (!got.ok()) return got.status();
  std::size_t differing = 0;
  for (std::size_t q = 0; q < queries.size(); ++q) {
    const Prediction expected = *reference.Predict(queries.input(q));
    for (std::size_t t = 0; t < kTargets; ++t) {
      if ((*got)[q].y(t) != expected.value[t]) {
        ++differing;
        break;
      }
    }
  }
  return differing;
}

// The same as a test's expectation: every prediction equal, bit for bit.
inline void ExpectServedPredictionsOf(Client& client, const std::string& model,
                                      const Model& reference,
                                      const Stream& queries) {
  absl::StatusOr<std::size_t> differing =
      CountServedPredictionsDiffering(client, model, reference, queries);
  ASSERT_TRUE(differing.ok()) << differing.status();
  EXPECT_EQ(*differing, 0u) << "of " << queries.size() << " queries";
}

// The threads a test streams feeds on until *stop: stopped and joined
// however the test ends (an assertion that returns early included).
class FeedThreads {
 public:
  explicit FeedThreads(std::atomic<bool>* stop) : stop_(stop) {}
  ~FeedThreads() { StopAndJoin(); }
  FeedThreads(const FeedThreads&) = delete;
  FeedThreads& operator=(const FeedThreads&) = delete;

  template <class Run>
  void Start(Run run) {
    threads_.emplace_back(std::move(run));
  }
  void StopAndJoin() {
    *stop_ = true;
    for (std::thread& thread : threads_) {
      if (thread.joinable()) thread.join();
    }
    threads_.clear();
  }

 private:
  std::atomic<bool>* const stop_;
  std::vector<std::thread> threads_;
};

}  // namespace streamreg

#endif  // STREAMREG_TESTS_SUPPORT_SAMPLE_FEED_H_
