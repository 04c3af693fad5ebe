#ifndef STREAMREG_CLIENT_CLI_INTERVAL_COVERAGE_H_
#define STREAMREG_CLIENT_CLI_INTERVAL_COVERAGE_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "streamreg/v1/regression.pb.h"

namespace streamreg {

// How often a stream's targets fell within the intervals of the predictions
// made for them (bench learn's running coverage): per target, over every
// sample and over each window of `window` consecutive samples. A prediction
// without intervals (a server before them) is not counted.
class IntervalCoverage {
 public:
  IntervalCoverage(std::size_t num_targets, std::uint64_t window);

  void Add(const v1::Prediction& prediction, std::span<const double> truth);
  // Each target's interval [lower, upper] against its truth.
  void Add(std::span<const double> lower, std::span<const double> upper,
           std::span<const double> truth);

  std::uint64_t counted() const { return counted_; }
  // Per target, the fraction within over every sample counted (NaN: none).
  std::vector<double> Coverage() const;
  // The coverage of each full window, per target: window_coverage()[w][t].
  const std::vector<std::vector<double>>& window_coverage() const {
    return windows_;
  }

 private:
  std::uint64_t window_;
  std::uint64_t counted_ = 0;
  std::vector<std::uint64_t> covered_;
  std::vector<std::uint64_t> covered_in_window_;
  std::uint64_t counted_in_window_ = 0;
  std::vector<std::vector<double>> windows_;
};

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_CLI_INTERVAL_COVERAGE_H_
