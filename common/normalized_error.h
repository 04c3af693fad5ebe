#ifndef STREAMREG_COMMON_NORMALIZED_ERROR_H_
#define STREAMREG_COMMON_NORMALIZED_ERROR_H_

#include <cstdint>
#include <span>
#include <vector>

namespace streamreg {

// The normalized mean squared error of predictions of m targets, the
// accuracy figure every report of the project gives: per target, the mean
// squared error over the variance of the true values (Welford's update),
// so 1 is as good as predicting the mean and 0 is perfect. Used for a test
// set (streamreg-eval, `streamreg predict`) and for a stream of predictions
// made before learning each sample (the clients' prequential nMSE), where
// a window of recent errors can be kept too; the variance is always the
// whole stream's. (The engine's own live figure, core/regression/
// prequential_selector.h, is exponentially forgotten and part of the
// model's durable state.)
class NormalizedError {
 public:
  explicit NormalizedError(std::size_t num_targets);

  // One prediction of every target and the true values.
  void Add(std::span<const double> predicted, std::span<const double> truth);

  std::size_t num_targets() const { return mean_.size(); }
  std::uint64_t count() const { return count_; }
  // nMSE of target t (0 while its values have not varied).
  double Nmse(std::size_t t) const;
  // The mean squared error of target t (0 before the first prediction).
  double MeanSquaredError(std::size_t t) const;
  // The mean over targets of nMSE.
  double MeanNmse() const;

  // The same over the predictions added since StartWindow() (all of them
  // until it is called).
  void StartWindow();
  double WindowMeanNmse() const;
  std::uint64_t window_count() const { return window_count_; }

 private:
  double Variance(std::size_t t) const;

  std::uint64_t count_ = 0;
  std::uint64_t window_count_ = 0;
  std::vector<double> mean_, m2_, squared_error_, window_squared_error_;
};

}  // namespace streamreg

#endif  // STREAMREG_COMMON_NORMALIZED_ERROR_H_
