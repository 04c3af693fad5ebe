#ifndef STREAMREG_CLIENT_CLI_AHEAD_ANSWERS_H_
#define STREAMREG_CLIENT_CLI_AHEAD_ANSWERS_H_

#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <vector>

#include "absl/time/time.h"
#include "client/cli/interval_coverage.h"
#include "common/normalized_error.h"
#include "streamreg/v1/regression.pb.h"

namespace streamreg {

// What a loop that asks for its predictions ahead of their ticks
// (LearnRequest.ahead) got: the predictions kept by tick as they arrive,
// and each tick, when it comes due, scored against the one in hand then —
// whether there was one (in time), its error and its interval against the
// tick's measured targets. A prediction that arrives after its tick was
// due is dropped (the tick went without). Not thread-safe.
class AheadAnswers {
 public:
  // The error is also kept by window of `error_window` ticks (a second's).
  AheadAnswers(std::size_t num_targets, std::uint64_t coverage_window,
               std::uint64_t error_window);

  // The predictions of ticks first_tick, first_tick + 1, ... arrived.
  void Arrived(
      std::uint64_t first_tick,
      const google::protobuf::RepeatedPtrField<v1::Prediction>& predictions);
  // Tick `tick` is due (ticks come due in order), its measured targets
  // `y`.
  void Due(std::uint64_t tick, std::span<const double> y);

  std::uint64_t due() const { return due_; }
  std::uint64_t in_time() const { return in_time_; }
  const NormalizedError& error() const { return error_; }
  // The nMSE over each full window of ticks (of the predictions in hand).
  const std::vector<double>& nmse_by_window() const { return by_window_; }
  const IntervalCoverage& coverage() const { return coverage_; }

 private:
  // Predictions of ticks first_ .. first_ + size - 1 (none where none
  // arrived).
  std::deque<std::optional<v1::Prediction>> kept_;
  std::uint64_t first_ = 0;
  std::uint64_t due_ = 0;
  std::uint64_t in_time_ = 0;
  NormalizedError error_;
  IntervalCoverage coverage_;
  std::uint64_t error_window_;
  std::vector<double> by_window_;
};

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_CLI_AHEAD_ANSWERS_H_
