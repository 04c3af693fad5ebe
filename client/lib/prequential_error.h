#ifndef STREAMREG_CLIENT_LIB_PREQUENTIAL_ERROR_H_
#define STREAMREG_CLIENT_LIB_PREQUENTIAL_ERROR_H_

#include <cstdint>
#include <span>
#include <vector>

#include "streamreg/v1/regression.pb.h"

namespace streamreg {

// A client's view of prequential (predict-then-learn) error: the squared
// errors of the predictions a Learn stream returns (made before learning
// each sample) over the variance of the targets seen, per target. Keeps
// the errors of the whole stream and of the current window (for nMSE over
// time); the variance is always the whole stream's.
class PrequentialError {
 public:
  explicit PrequentialError(std::size_t num_targets)
      : sum_(num_targets),
        sum_squares_(num_targets),
        squared_error_(num_targets),
        window_squared_error_(num_targets) {}

  void Add(const v1::Prediction& before, std::span<const double> y) {
    ++count_;
    ++window_count_;
    for (std::size_t t = 0; t < sum_.size(); ++t) {
      const double e = before.y(static_cast<int>(t)) - y[t];
      squared_error_[t] += e * e;
      window_squared_error_[t] += e * e;
      sum_[t] += y[t];
      sum_squares_[t] += y[t] * y[t];
    }
  }

  // nMSE of target t over the whole stream (0 while y_t has not varied).
  double Nmse(std::size_t t) const { return Nmse(t, squared_error_, count_); }
  // Mean over targets of nMSE, over the whole stream / the window.
  double MeanNmse() const { return Mean(squared_error_, count_); }
  double WindowMeanNmse() const {
    return Mean(window_squared_error_, window_count_);
  }
  std::uint64_t window_count() const { return window_count_; }
  void StartWindow() {
    window_count_ = 0;
    std::fill(window_squared_error_.begin(), window_squared_error_.end(), 0.0);
  }

 private:
  double Nmse(std::size_t t, const std::vector<double>& squared_error,
              std::uint64_t count) const {
    if (count == 0 || count_ == 0) return 0.0;
    const double mean = sum_[t] / count_;
    const double variance = sum_squares_[t] / count_ - mean * mean;
    return variance > 0 ? squared_error[t] / count / variance : 0.0;
  }
  double Mean(const std::vector<double>& squared_error,
              std::uint64_t count) const {
    if (sum_.empty()) return 0.0;
    double total = 0.0;
    for (std::size_t t = 0; t < sum_.size(); ++t) {
      total += Nmse(t, squared_error, count);
    }
    return total / sum_.size();
  }

  std::uint64_t count_ = 0;
  std::uint64_t window_count_ = 0;
  std::vector<double> sum_, sum_squares_, squared_error_, window_squared_error_;
};

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_LIB_PREQUENTIAL_ERROR_H_
