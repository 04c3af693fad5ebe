#ifndef STREAMREG_BENCH_REGRESSION_METHODS_H_
#define STREAMREG_BENCH_REGRESSION_METHODS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/metric/learned_metric.h"
#include "core/model/model_config.h"

namespace streamreg {

// One train/test split of a single-target regression problem, raw values.
struct RegressionSplit {
  std::size_t dim = 0;
  std::vector<double> train_x, train_y;  // row-major x
  std::vector<double> test_x, test_y;
  std::size_t train_size() const { return train_y.size(); }
  std::size_t test_size() const { return test_y.size(); }
};

// The methods: k-NN or kernel (box) regression, in the Euclidean,
// gradient-weights, EGOP, MLKR or GLML metric, named knn, knn-gw, knn-egop,
// knn-mlkr, knn-glml, kr, kr-gw, kr-egop, kr-mlkr, kr-glml (the GW and
// EGOP ones and the Euclidean are the papers' tables').
struct RegressionMethod {
  RegressorKind regressor = RegressorKind::kKernel;
  MetricKind metric = MetricKind::kEuclidean;
};
absl::StatusOr<RegressionMethod> ParseRegressionMethod(absl::string_view name);
std::string RegressionMethodName(RegressionMethod method);

struct MethodOutcome {
  double nmse = 0.0;        // test MSE / variance of the test targets
  double predict_us = 0.0;  // mean per test query
  double fit_seconds = 0.0;
  // Online: the mean time one model took to learn one training sample
  // (fit_seconds over the samples and the models fed them).
  double learn_us = 0.0;
  // What was chosen: the regressor's bandwidth or k, and for a learned
  // metric the gradient estimator's h and t.
  double bandwidth = 0.0;
  std::size_t k = 0;
  double gradient_bandwidth = 0.0;
  double gradient_step = 0.0;
};

// The papers' batch procedure (Kpotufe & Boularias §5.2, Trivedi et al.
// §5.2) for GW and EGOP: standardize by the training statistics; choose the
// gradient estimator's h by 2-fold cross-validation of Euclidean kernel
// regression on the training set; for each t in {h/4, h/2, h} estimate the
// metric from every training sample (batch estimator) and cross-validate the
// regressor's bandwidth or k in it (2-fold); keep the best (t, h or k); fit
// on the whole training set and predict the test set. MLKR: the map fitted
// on the standardized training set (FitMlkr from the scaled identity, each
// point's 64 nearest), normalized to trace A^T A = d like the other
// metrics, then the regressor cross-validated in it. GLML: the Gaussian
// fitted to the training set, the metric at each query (10^-2 gamma
// ratio, the paper's), the neighbours found exactly under it, the
// regressor cross-validated.
MethodOutcome RunBatch(const RegressionSplit& split, RegressionMethod method);

// The online procedure (not for batch-only metrics): stream the training
// samples one at a time through a Model (metric learned online, h and k chosen
// by its prequential selection; for a metric learned from gradients, one
// Model per t/h in {1/4, 1/2, 1} and the one with the least prequential
// error kept), then predict the test set. fit_seconds counts every Model's
// learning.
MethodOutcome RunOnline(const RegressionSplit& split, RegressionMethod method,
                        std::uint64_t seed);

}  // namespace streamreg

#endif  // STREAMREG_BENCH_REGRESSION_METHODS_H_
