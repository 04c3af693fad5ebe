#ifndef STREAMREG_CLIENT_CLI_AHEAD_ANSWERS_H_
#define STREAMREG_CLIENT_CLI_AHEAD_ANSWERS_H_

#include <cstdint>
#include <span>
#include <vector>

#include "client/cli/interval_coverage.h"
#include "client/lib/realtime_channel.h"
#include "common/normalized_error.h"

namespace streamreg {

// What a loop that reads its predictions from a RealtimeChannel got at its
// ticks: how many read the prediction made for their desired state (in
// time), and those predictions' error and intervals against the ticks'
// measured targets, overall and by window of ticks. Not thread-safe.
class AheadAnswers {
 public:
  // The error is also kept by window of `error_window` ticks (a second's).
  AheadAnswers(std::size_t num_targets, std::uint64_t coverage_window,
               std::uint64_t error_window);

  // A tick came due: what its read gave (`predicted`, `lower`, `upper`:
  // the prediction, when reading.predicted()), and its measured targets.
  void Due(const RealtimeReading& reading, std::span<const double> predicted,
           std::span<const double> lower, std::span<const double> upper,
           std::span<const double> y);

  std::uint64_t due() const { return due_; }
  std::uint64_t in_time() const { return in_time_; }
  const NormalizedError& error() const { return error_; }
  // The nMSE over each full window of ticks (of the predictions in hand).
  const std::vector<double>& nmse_by_window() const { return by_window_; }
  const IntervalCoverage& coverage() const { return coverage_; }

 private:
  std::uint64_t due_ = 0;
  std::uint64_t in_time_ = 0;
  NormalizedError error_;
  IntervalCoverage coverage_;
  std::uint64_t error_window_;
  std::vector<double> by_window_;
};

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_CLI_AHEAD_ANSWERS_H_
