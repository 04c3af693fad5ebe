#include "client/lib/realtime_channel.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "client/lib/internal/spsc_row_ring.h"
#include "client/lib/internal/tick_answer_table.h"
#include "client/lib/retry_policy.h"

namespace streamreg {
namespace {

// The most samples, and points ahead, in one Learn message (docs/api.md,
// "Limits").
constexpr std::size_t kMessageSamples = 1024;
constexpr std::size_t kMessagePoints = 1024;

bool AllFinite(std::span<const double> values) {
  return std::all_of(values.begin(), values.end(),
                     [](double v) { return std::isfinite(v); });
}

std::uint64_t RandomIdBase() {
  absl::BitGen random;
  return static_cast<std::uint64_t>(absl::Uniform<std::uint32_t>(
             random, 1, std::numeric_limits<std::uint32_t>::max()))
         << 32;
}

// Erases the first `rows` rows of `width` values of `values`, and their
// ticks.
void EraseFront(std::vector<std::uint64_t>& ticks, std::vector<double>& values,
                std::size_t rows, std::size_t width) {
  ticks.erase(ticks.begin(), ticks.begin() + static_cast<long>(rows));
  values.erase(values.begin(),
               values.begin() + static_cast<long>(rows * width));
}

}  // namespace

RealtimeChannel::RealtimeChannel(Client* client, std::string model,
                                 RealtimeChannelOptions options)
    : client_(client),
      model_(std::move(model)),
      options_(std::move(options)),
      id_base_(RandomIdBase()),
      samples_(std::make_unique<SpscRowRing>(
          options_.capacity, options_.inputs + options_.targets)),
      states_(
          std::make_unique<SpscRowRing>(options_.capacity, options_.inputs)),
      // Room for every tick from the one being read to the farthest one
      // ahead, with the batch's slack, twice over.
      answers_(std::make_unique<TickAnswerTable>(
          4 * (options_.horizon + options_.batch_ticks + 1), options_.targets)),
      read_lower_(options_.targets),
      read_upper_(options_.targets),
      session_(std::make_unique<LearnSession>(client_, model_)),
      courier_([this] { RunCourier(); }) {}

RealtimeChannel::~RealtimeChannel() { Stop(); }

RealtimeChannel::Handed RealtimeChannel::Hand(std::uint64_t tick,
                                              std::span<const double> x,
                                              std::span<const double> y,
                                              std::span<const double> desired) {
  if (closing_.load(std::memory_order_relaxed)) return Handed::kClosed;
  const std::size_t width = options_.inputs;
  const bool has_sample = !x.empty() || !y.empty();
  if ((has_sample && (x.size() != width || y.size() != options_.targets ||
                      !AllFinite(x) || !AllFinite(y))) ||
      width == 0 || desired.size() % width != 0 ||
      desired.size() / width > options_.horizon) {
    Count(hands_invalid_);
    return Handed::kInvalid;
  }
  loop_tick_.store(tick, std::memory_order_relaxed);
  Handed handed = Handed::kQueued;
  if (has_sample) {
    if (samples_->Push(tick, {x, y})) {
      Count(samples_handed_);
    } else {
      Count(samples_dropped_);
      handed = Handed::kFull;
    }
  }
  for (std::size_t row = 0; row < desired.size() / width; ++row) {
    const std::uint64_t state_tick = tick + 1 + row;
    if (any_state_ && state_tick <= states_through_) continue;
    if (!states_->Push(state_tick, {desired.subspan(row * width, width)})) {
      Count(states_full_);
      return Handed::kFull;  // the rest, when handed again
    }
    states_through_ = state_tick;
    any_state_ = true;
  }
  return handed;
}

RealtimeReading RealtimeChannel::Read(std::uint64_t tick, std::span<double> y,
                                      std::span<const double> fallback,
                                      const ReadBounds& bounds,
                                      std::span<double> lower,
                                      std::span<double> upper) {
  Count(reads_);
  RealtimeReading reading;
  TickAnswerOrigin origin;
  if (answers_->Get(tick, &origin, y, read_lower_, read_upper_) ==
      TickAnswerTable::Lookup::kFound) {
    reading.learned = origin.learned;
    reading.age_ticks =
        tick > origin.asked_at_tick ? tick - origin.asked_at_tick : 0;
    reading.source = RealtimeReading::Source::kPrediction;
    if (reading.age_ticks > bounds.max_age_ticks) {
      reading.source = RealtimeReading::Source::kStale;
    }
    const std::size_t bounded =
        std::min(bounds.max_half_width.size(), options_.targets);
    for (std::size_t i = 0; i < bounded && reading.predicted(); ++i) {
      // An infinite interval (too few errors scored yet) is too wide too.
      if (!((read_upper_[i] - read_lower_[i]) / 2 <=
            bounds.max_half_width[i])) {
        reading.source = RealtimeReading::Source::kWide;
      }
    }
  }
  switch (reading.source) {
    case RealtimeReading::Source::kPrediction:
      Count(reads_predicted_);
      std::copy_n(read_lower_.begin(),
                  std::min(lower.size(), read_lower_.size()), lower.begin());
      std::copy_n(read_upper_.begin(),
                  std::min(upper.size(), read_upper_.size()), upper.begin());
      return reading;
    case RealtimeReading::Source::kNone:
      Count(reads_none_);
      break;
    case RealtimeReading::Source::kStale:
      Count(reads_stale_);
      break;
    case RealtimeReading::Source::kWide:
      Count(reads_wide_);
      break;
  }
  std::copy_n(fallback.begin(), std::min(fallback.size(), y.size()), y.begin());
  std::fill(lower.begin(), lower.end(), -INFINITY);
  std::fill(upper.begin(), upper.end(), INFINITY);
  return reading;
}

absl::Status RealtimeChannel::Close(absl::Duration timeout) {
  closing_.store(true);
  bool done = false;
  {
    absl::MutexLock lock(&mutex_);
    woken_ = true;
    done = mutex_.AwaitWithTimeout(absl::Condition(&courier_done_), timeout);
  }
  if (!done) {
    const std::uint64_t waiting =
        samples_handed_.load() - samples_durable_.load();
    Stop();
    return absl::DeadlineExceededError(absl::StrCat(
        "the server did not report ", waiting, " samples durable within ",
        absl::FormatDuration(timeout), "; given up"));
  }
  if (courier_.joinable()) courier_.join();
  absl::MutexLock lock(&mutex_);
  return close_status_;
}

void RealtimeChannel::Stop() {
  stopping_.store(true);
  session_->Cancel();
  {
    absl::MutexLock lock(&mutex_);
    woken_ = true;
  }
  if (courier_.joinable()) courier_.join();
}

RealtimeChannelStats RealtimeChannel::stats() const {
  RealtimeChannelStats stats;
  stats.samples_handed = samples_handed_.load();
  stats.samples_dropped = samples_dropped_.load();
  stats.states_full = states_full_.load();
  stats.hands_invalid = hands_invalid_.load();
  stats.samples_sent = samples_sent_.load();
  stats.samples_durable = samples_durable_.load();
  stats.samples_refused = samples_refused_.load();
  stats.messages = messages_.load();
  stats.failures = failures_.load();
  stats.predictions = predictions_.load();
  stats.reads = reads_.load();
  stats.reads_predicted = reads_predicted_.load();
  stats.reads_none = reads_none_.load();
  stats.reads_stale = reads_stale_.load();
  stats.reads_wide = reads_wide_.load();
  absl::MutexLock lock(&mutex_);
  stats.last_error = last_error_;
  return stats;
}

void RealtimeChannel::RunCourier() {
  while (!stopping_.load()) {
    Drain();
    const bool closing = closing_.load();
    if (ShouldSend(closing)) {
      if (!SendPending()) Nap(options_.retry_pause);
      continue;
    }
    if (closing && pending_.sample_ticks.empty()) {
      // Hand() queues nothing now, and Drain() emptied the rings.
      absl::Status status = session_->Close();
      samples_durable_.store(session_->durable_samples());
      absl::MutexLock lock(&mutex_);
      close_status_ = std::move(status);
      courier_done_ = true;
      return;
    }
    Nap(options_.poll);
  }
  absl::MutexLock lock(&mutex_);
  close_status_ = absl::CancelledError("the channel was stopped");
  courier_done_ = true;
}

void RealtimeChannel::Drain() {
  std::uint64_t tick = 0;
  std::span<const double> row;
  while (pending_.sample_ticks.size() < options_.capacity &&
         samples_->Front(&tick, &row)) {
    pending_.sample_ticks.push_back(tick);
    pending_.sample_values.insert(pending_.sample_values.end(), row.begin(),
                                  row.end());
    samples_->Pop();
  }
  while (states_->Front(&tick, &row)) {
    pending_.state_ticks.push_back(tick);
    pending_.state_values.insert(pending_.state_values.end(), row.begin(),
                                 row.end());
    states_->Pop();
  }
  // A state whose tick has come is no longer worth predicting.
  const std::uint64_t now = loop_tick_.load(std::memory_order_relaxed);
  std::size_t past = 0;
  while (past < pending_.state_ticks.size() &&
         pending_.state_ticks[past] <= now) {
    ++past;
  }
  EraseFront(pending_.state_ticks, pending_.state_values, past,
             options_.inputs);
}

bool RealtimeChannel::ShouldSend(bool closing) const {
  const std::uint64_t now = loop_tick_.load(std::memory_order_relaxed);
  const std::vector<std::uint64_t>& samples = pending_.sample_ticks;
  if (!samples.empty() && (closing || samples.size() >= options_.batch_ticks ||
                           samples.front() + options_.batch_ticks <= now)) {
    return true;
  }
  // A desired state due within a round trip's margin.
  return !closing && !pending_.state_ticks.empty() &&
         pending_.state_ticks.front() <= now + options_.lead_ticks;
}

bool RealtimeChannel::SendPending() {
  const std::size_t width = options_.inputs + options_.targets;
  const std::size_t samples =
      std::min(pending_.sample_ticks.size(), kMessageSamples);
  // The states due before the message after this one could bring their
  // predictions: asked as late as that allows, so that the model has
  // learned as much as it can when it predicts them.
  const std::uint64_t now = loop_tick_.load(std::memory_order_relaxed);
  std::size_t states = 0;
  while (!closing_.load() && states < pending_.state_ticks.size() &&
         states < kMessagePoints &&
         pending_.state_ticks[states] <=
             now + options_.batch_ticks + options_.lead_ticks) {
    ++states;
  }
  std::vector<TickSample> ticks(samples);
  for (std::size_t i = 0; i < samples; ++i) {
    const std::span<const double> row(&pending_.sample_values[i * width],
                                      width);
    ticks[i] = {.x = row.first(options_.inputs),
                .y = row.subspan(options_.inputs),
                .sample_id = id_base_ + pending_.sample_ticks[i]};
  }
  std::vector<AheadPoint> points(states);
  for (std::size_t i = 0; i < states; ++i) {
    points[i] = {
        .x = std::span<const double>(
            &pending_.state_values[i * options_.inputs], options_.inputs),
        .sample_id = id_base_ + pending_.state_ticks[i]};
  }
  const std::uint64_t asked_at = now;
  absl::StatusOr<v1::LearnResponse> response =
      session_->LearnAhead(ticks, points, /*answer_samples=*/false);
  if (!response.ok()) {
    if (stopping_.load()) return true;
    Fail(response.status());
    if (RetryPolicy::IsRetryableResend(response.status())) return false;
    // Refused for good (e.g. the model does not exist): given up.
    samples_refused_.fetch_add(samples);
  } else {
    messages_.fetch_add(1);
    samples_sent_.fetch_add(samples);
    samples_durable_.store(session_->durable_samples());
    const TickAnswerOrigin origin = {.learned = response->learned(),
                                     .asked_at_tick = asked_at};
    const std::size_t answered =
        std::min<std::size_t>(states, response->ahead_size());
    for (std::size_t i = 0; i < answered; ++i) {
      const v1::Prediction& prediction = response->ahead(static_cast<int>(i));
      answers_->Put(pending_.state_ticks[i], origin,
                    PredictedValues(prediction),
                    {prediction.lower().data(),
                     static_cast<std::size_t>(prediction.lower_size())},
                    {prediction.upper().data(),
                     static_cast<std::size_t>(prediction.upper_size())});
    }
    predictions_.fetch_add(answered);
  }
  EraseFront(pending_.sample_ticks, pending_.sample_values, samples, width);
  EraseFront(pending_.state_ticks, pending_.state_values, states,
             options_.inputs);
  return true;
}

void RealtimeChannel::Nap(absl::Duration wait) {
  absl::MutexLock lock(&mutex_);
  mutex_.AwaitWithTimeout(absl::Condition(&woken_), wait);
  woken_ = false;
}

void RealtimeChannel::Fail(const absl::Status& status) {
  failures_.fetch_add(1);
  absl::MutexLock lock(&mutex_);
  last_error_ = status;
}

}  // namespace streamreg
