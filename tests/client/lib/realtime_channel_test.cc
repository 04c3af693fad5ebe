// RealtimeChannel against a scripted Learn service, call by call: a read
// gives the prediction made for its tick's desired state, or the caller's
// fallback when none came, when it is too old or its interval too wide;
// every sample handed is learned once, in order, also across a server
// that stalls or goes away and comes back; bad hand-offs queue nothing;
// and the loop's two calls never allocate (a counting allocator) nor wait
// on a stalled server.
#include "client/lib/realtime_channel.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <new>
#include <numeric>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "client/lib/client.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "streamreg/v1/regression_service.grpc.pb.h"

// Allocations made by the thread that set it counting.
namespace {
thread_local bool counting_allocations = false;
thread_local std::uint64_t allocations = 0;

void* Allocate(std::size_t size) {
  if (counting_allocations) ++allocations;
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* AllocateAligned(std::size_t size, std::align_val_t align) {
  if (counting_allocations) ++allocations;
  const auto alignment = static_cast<std::size_t>(align);
  if (void* p = std::aligned_alloc(
          alignment, (size + alignment - 1) / alignment * alignment)) {
    return p;
  }
  throw std::bad_alloc();
}
}  // namespace

void* operator new(std::size_t size) { return Allocate(size); }
void* operator new[](std::size_t size) { return Allocate(size); }
void* operator new(std::size_t size, std::align_val_t align) {
  return AllocateAligned(size, align);
}
void* operator new[](std::size_t size, std::align_val_t align) {
  return AllocateAligned(size, align);
}
// The nothrow forms too: a library that allocates with one and frees with
// the plain delete (gRPC does) must get both from here.
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  if (counting_allocations) ++allocations;
  return std::malloc(size == 0 ? 1 : size);
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  if (counting_allocations) ++allocations;
  return std::malloc(size == 0 ? 1 : size);
}
void* operator new(std::size_t size, std::align_val_t align,
                   const std::nothrow_t&) noexcept {
  try {
    return AllocateAligned(size, align);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}
void* operator new[](std::size_t size, std::align_val_t align,
                     const std::nothrow_t&) noexcept {
  try {
    return AllocateAligned(size, align);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete(void* p, std::align_val_t,
                     const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::align_val_t,
                       const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}

namespace streamreg {
namespace {

constexpr std::size_t kInputs = 3;
constexpr std::size_t kTargets = 2;

// The scripted model: target i of a point x predicts sum(x) + i, with the
// interval sum(x) + i ± half_width.
double Predicted(std::span<const double> x, std::size_t target) {
  return std::accumulate(x.begin(), x.end(), 0.0) + static_cast<double>(target);
}

// Learn as the test scripts it: every message answered at once with the
// predictions of its points ahead (Predicted), `learned` the samples read
// so far, and every message reported durable; or, while stalled, a
// message read and not answered until resumed (or the call cancelled).
class ScriptedAheadService final : public v1::RegressionService::Service {
 public:
  grpc::Status Learn(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<v1::LearnResponse, v1::LearnRequest>* stream)
      override {
    v1::LearnRequest request;
    std::uint64_t messages = 0;
    while (stream->Read(&request)) {
      while (stalled_.load() && !context->IsCancelled()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      if (context->IsCancelled()) return grpc::Status::CANCELLED;
      ++messages;
      v1::LearnResponse response;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        for (const v1::Sample& sample : request.samples()) {
          ids_.push_back(sample.sample_id());
        }
        response.set_learned(ids_.size());
        ++messages_;
      }
      for (const v1::Query& point : request.ahead()) {
        v1::Prediction* prediction = response.add_ahead();
        for (std::size_t i = 0; i < kTargets; ++i) {
          const double y = Predicted(
              {point.x().data(), static_cast<std::size_t>(point.x_size())}, i);
          prediction->add_y(y);
          prediction->add_lower(y - half_width_.load());
          prediction->add_upper(y + half_width_.load());
        }
      }
      response.set_durable_messages(messages);
      if (!stream->Write(response)) break;
    }
    return grpc::Status::OK;
  }

  void set_stalled(bool stalled) { stalled_.store(stalled); }
  void set_half_width(double half_width) { half_width_.store(half_width); }
  std::vector<std::uint64_t> ids() {
    std::lock_guard<std::mutex> lock(mutex_);
    return ids_;
  }
  std::uint64_t messages() {
    std::lock_guard<std::mutex> lock(mutex_);
    return messages_;
  }

 private:
  std::atomic<bool> stalled_ = false;
  std::atomic<double> half_width_ = 0.5;
  std::mutex mutex_;
  std::vector<std::uint64_t> ids_;
  std::uint64_t messages_ = 0;
};

// The states of a loop: tick t's desired state is (t, 1, 2), its measured
// sample x = (t, 1, 2), y = (t, -t).
std::vector<double> StateOf(std::uint64_t tick) {
  return {static_cast<double>(tick), 1.0, 2.0};
}

class RealtimeChannelTest : public ::testing::Test {
 protected:
  void SetUp() override { Serve(0); }
  void TearDown() override {
    channel_.reset();
    client_.reset();
    if (server_ != nullptr) server_->Shutdown();
  }

  // Serves on `port` (0: any), keeping the port.
  void Serve(int port) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:" + std::to_string(port),
                             grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
  }

  void Open(RealtimeChannelOptions options = {}) {
    ClientOptions client_options;
    client_options.address = "127.0.0.1:" + std::to_string(port_);
    client_options.retry.initial_backoff = absl::Milliseconds(1);
    client_options.retry.max_backoff = absl::Milliseconds(20);
    client_options.retry.max_attempts = 3;
    client_ = std::make_unique<Client>(client_options);
    options.inputs = kInputs;
    options.targets = kTargets;
    options.horizon = 8;
    options.batch_ticks = 4;
    options.retry_pause = absl::Milliseconds(20);
    channel_ = std::make_unique<RealtimeChannel>(client_.get(), "m", options);
  }

  // Hands tick `tick`'s sample and the desired states of the horizon.
  RealtimeChannel::Handed HandTick(std::uint64_t tick) {
    const std::vector<double> x = StateOf(tick);
    const double y[] = {static_cast<double>(tick), -static_cast<double>(tick)};
    std::vector<double> desired;
    for (std::uint64_t k = 1; k <= channel_->options().horizon; ++k) {
      const std::vector<double> state = StateOf(tick + k);
      desired.insert(desired.end(), state.begin(), state.end());
    }
    return channel_->Hand(tick, x, y, desired);
  }

  // Reads tick `tick` until its prediction comes (a test's patience, not
  // a loop's), within `bounds`.
  RealtimeReading ReadWhenCome(std::uint64_t tick, std::span<double> y,
                               const ReadBounds& bounds = {}) {
    const double fallback[] = {-1, -1};
    RealtimeReading reading;
    for (int i = 0; i < 5000; ++i) {
      reading = channel_->Read(tick, y, fallback, bounds);
      if (reading.source != RealtimeReading::Source::kNone) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return reading;
  }

  ScriptedAheadService service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<Client> client_;
  std::unique_ptr<RealtimeChannel> channel_;
};

TEST_F(RealtimeChannelTest, ReadsThePredictionMadeForItsTicksDesiredState) {
  Open();
  for (std::uint64_t tick = 0; tick < 40; ++tick) {
    ASSERT_EQ(HandTick(tick), RealtimeChannel::Handed::kQueued);
    // The next tick's prediction, asked for at this one or before.
    const std::uint64_t next = tick + 1;
    double y[kTargets] = {};
    double lower[kTargets] = {}, upper[kTargets] = {};
    const double fallback[] = {-1, -1};
    RealtimeReading reading = ReadWhenCome(next, y);
    ASSERT_EQ(reading.source, RealtimeReading::Source::kPrediction)
        << "tick " << next;
    reading = channel_->Read(next, y, fallback, {}, lower, upper);
    const std::vector<double> state = StateOf(next);
    for (std::size_t i = 0; i < kTargets; ++i) {
      EXPECT_EQ(y[i], Predicted(state, i)) << "tick " << next;
      EXPECT_EQ(lower[i], y[i] - 0.5);
      EXPECT_EQ(upper[i], y[i] + 0.5);
    }
    // Asked for at an earlier tick, by a model that had learned samples
    // of ticks before it.
    EXPECT_GE(reading.age_ticks, 1u);
    EXPECT_LE(reading.age_ticks, 8u);
    EXPECT_LE(reading.learned, next);
  }
  ASSERT_TRUE(channel_->Close().ok());
  const RealtimeChannelStats stats = channel_->stats();
  EXPECT_EQ(stats.samples_handed, 40u);
  EXPECT_EQ(stats.samples_sent, 40u);
  EXPECT_EQ(stats.samples_durable, 40u);
  EXPECT_GT(stats.reads_predicted, 0u);
}

TEST_F(RealtimeChannelTest, LearnsEverySampleHandedOnceInOrder) {
  Open();
  for (std::uint64_t tick = 0; tick < 500; ++tick) {
    ASSERT_EQ(HandTick(tick), RealtimeChannel::Handed::kQueued);
  }
  ASSERT_TRUE(channel_->Close().ok());
  const std::vector<std::uint64_t> ids = service_.ids();
  ASSERT_EQ(ids.size(), 500u);
  for (std::size_t i = 1; i < ids.size(); ++i) {
    EXPECT_EQ(ids[i], ids[0] + i);
  }
  EXPECT_EQ(channel_->stats().samples_durable, 500u);
  EXPECT_EQ(HandTick(500), RealtimeChannel::Handed::kClosed);
}

TEST_F(RealtimeChannelTest, FallsBackWhenNoPredictionCame) {
  service_.set_stalled(true);
  Open();
  ASSERT_EQ(HandTick(0), RealtimeChannel::Handed::kQueued);
  double y[kTargets] = {};
  double lower[kTargets] = {}, upper[kTargets] = {};
  const double fallback[] = {7, 8};
  const RealtimeReading reading =
      channel_->Read(1, y, fallback, {}, lower, upper);
  EXPECT_EQ(reading.source, RealtimeReading::Source::kNone);
  EXPECT_EQ(y[0], 7);
  EXPECT_EQ(y[1], 8);
  EXPECT_EQ(lower[0], -INFINITY);
  EXPECT_EQ(upper[1], INFINITY);
  EXPECT_EQ(channel_->stats().reads_none, 1u);
  // Destroying the channel cancels the exchange the server holds.
}

TEST_F(RealtimeChannelTest, FallsBackOnAStaleOrWideAnswer) {
  service_.set_half_width(3.0);
  Open();
  ASSERT_EQ(HandTick(0), RealtimeChannel::Handed::kQueued);
  double y[kTargets] = {};
  const double fallback[] = {7, 8};
  ASSERT_EQ(ReadWhenCome(5, y).source, RealtimeReading::Source::kPrediction);
  const double narrow[] = {2.9, 100.0};
  const double wide_enough[] = {3.0, 3.0};
  RealtimeReading reading =
      channel_->Read(5, y, fallback, {.max_half_width = narrow});
  EXPECT_EQ(reading.source, RealtimeReading::Source::kWide);
  EXPECT_EQ(y[0], 7);
  EXPECT_EQ(reading.age_ticks, 5u);  // asked at tick 0
  reading = channel_->Read(5, y, fallback, {.max_half_width = wide_enough});
  EXPECT_EQ(reading.source, RealtimeReading::Source::kPrediction);
  EXPECT_EQ(y[0], Predicted(StateOf(5), 0));
  reading = channel_->Read(5, y, fallback, {.max_age_ticks = 4});
  EXPECT_EQ(reading.source, RealtimeReading::Source::kStale);
  EXPECT_EQ(y[1], 8);
  reading = channel_->Read(5, y, fallback, {.max_age_ticks = 5});
  EXPECT_EQ(reading.source, RealtimeReading::Source::kPrediction);
  const RealtimeChannelStats stats = channel_->stats();
  EXPECT_EQ(stats.reads_wide, 1u);
  EXPECT_EQ(stats.reads_stale, 1u);
}

TEST_F(RealtimeChannelTest, RefusesABadHandOffWhole) {
  Open();
  const double x[] = {1, 2, 3}, y[] = {1, 2};
  const double short_x[] = {1, 2}, nan_y[] = {1, NAN};
  const double ragged[] = {1, 2, 3, 4};
  const std::vector<double> too_far(9 * kInputs, 1.0);  // horizon 8
  using Handed = RealtimeChannel::Handed;
  EXPECT_EQ(channel_->Hand(0, short_x, y, {}), Handed::kInvalid);
  EXPECT_EQ(channel_->Hand(0, x, nan_y, {}), Handed::kInvalid);
  EXPECT_EQ(channel_->Hand(0, x, y, ragged), Handed::kInvalid);
  EXPECT_EQ(channel_->Hand(0, x, y, too_far), Handed::kInvalid);
  EXPECT_EQ(channel_->Hand(0, x, {}, {}), Handed::kInvalid);
  EXPECT_EQ(channel_->stats().hands_invalid, 5u);
  ASSERT_TRUE(channel_->Close().ok());
  EXPECT_TRUE(service_.ids().empty());
  EXPECT_EQ(channel_->stats().samples_handed, 0u);
}

TEST_F(RealtimeChannelTest, NeverWaitsOnAStalledServerAndCatchesUpAfter) {
  RealtimeChannelOptions options;
  options.capacity = 256;
  service_.set_stalled(true);
  Open(options);
  using Handed = RealtimeChannel::Handed;
  // The loop runs on while the server holds the first message: the queues
  // take their capacity, then drop and say so; reads fall back.
  std::uint64_t full = 0;
  const double fallback[] = {7, 8};
  double y[kTargets] = {};
  for (std::uint64_t tick = 0; tick < 1000; ++tick) {
    const Handed handed = HandTick(tick);
    ASSERT_TRUE(handed == Handed::kQueued || handed == Handed::kFull);
    full += handed == Handed::kFull;
    EXPECT_FALSE(channel_->Read(tick, y, fallback).predicted());
  }
  EXPECT_GT(full, 0u);
  const RealtimeChannelStats stalled = channel_->stats();
  EXPECT_GE(stalled.samples_handed, 256u);
  EXPECT_GT(stalled.samples_dropped, 0u);
  EXPECT_GT(stalled.states_full, 0u);
  EXPECT_EQ(stalled.samples_handed + stalled.samples_dropped, 1000u);
  service_.set_stalled(false);
  ASSERT_TRUE(channel_->Close().ok());
  // Every sample queued was learned, once.
  const std::vector<std::uint64_t> ids = service_.ids();
  EXPECT_EQ(ids.size(), stalled.samples_handed);
  EXPECT_EQ(std::set<std::uint64_t>(ids.begin(), ids.end()).size(), ids.size());
  EXPECT_EQ(channel_->stats().samples_durable, stalled.samples_handed);
}

TEST_F(RealtimeChannelTest, SendsWhatItHeldToAServerThatCameBack) {
  Open();
  for (std::uint64_t tick = 0; tick < 100; ++tick) HandTick(tick);
  double y[kTargets] = {};
  ASSERT_TRUE(ReadWhenCome(100, y).predicted());
  server_->Shutdown(std::chrono::system_clock::now());  // streams cut
  server_.reset();
  // Handed while no server listens: each message fails (the client's
  // retries spent), waits the channel's pause and is sent again.
  for (std::uint64_t tick = 100; tick < 200; ++tick) {
    ASSERT_EQ(HandTick(tick), RealtimeChannel::Handed::kQueued);
  }
  for (int i = 0; i < 5000 && channel_->stats().failures == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_GT(channel_->stats().failures, 0u);
  EXPECT_FALSE(channel_->stats().last_error.ok());
  ASSERT_NO_FATAL_FAILURE(Serve(port_));
  for (std::uint64_t tick = 200; tick < 300; ++tick) HandTick(tick);
  ASSERT_TRUE(ReadWhenCome(300, y).predicted());
  ASSERT_TRUE(channel_->Close().ok());
  std::vector<std::uint64_t> ids = service_.ids();
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  ASSERT_EQ(ids.size(), 300u) << "every tick's sample, across the outage";
  EXPECT_EQ(ids.back() - ids.front(), 299u);
  EXPECT_EQ(channel_->stats().samples_durable, 300u);
}

TEST_F(RealtimeChannelTest, TheLoopsCallsNeverAllocate) {
  Open();
  std::vector<double> desired;
  for (std::uint64_t k = 1; k <= 8; ++k) {
    const std::vector<double> state = StateOf(k);
    desired.insert(desired.end(), state.begin(), state.end());
  }
  const double x[] = {1, 2, 3}, y_measured[] = {1, 2}, fallback[] = {0, 0};
  const double bound[] = {1.0, 1.0};
  double y[kTargets] = {}, lower[kTargets] = {}, upper[kTargets] = {};
  std::uint64_t predicted = 0;
  counting_allocations = true;
  for (std::uint64_t tick = 0; tick < 2000; ++tick) {
    channel_->Hand(tick, x, y_measured, desired);
    predicted +=
        channel_
            ->Read(tick, y, fallback, {.max_half_width = bound}, lower, upper)
            .predicted();
    if (tick % 50 == 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  counting_allocations = false;
  EXPECT_EQ(allocations, 0u);
  // The courier ran meanwhile: the calls were measured while it worked.
  EXPECT_GT(service_.messages(), 0u);
  EXPECT_GT(predicted, 0u);
}

}  // namespace
}  // namespace streamreg
