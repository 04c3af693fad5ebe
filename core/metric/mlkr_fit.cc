#include "core/metric/mlkr_fit.h"

#include <algorithm>
#include <cmath>

#include "Eigen/Core"
#include "Eigen/Eigenvalues"
#include "absl/strings/str_format.h"
#include "core/metric/windowed_knn.h"

namespace streamreg {
namespace {

using RowMatrix =
    Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstRowMap = Eigen::Map<const RowMatrix>;

Eigen::Index Index(std::size_t n) { return static_cast<Eigen::Index>(n); }

RowMatrix MapAll(const MlkrSamples& samples, std::span<const double> a,
                 std::size_t rank) {
  return ConstRowMap(samples.x.data(), Index(samples.n), Index(samples.d)) *
         ConstRowMap(a.data(), Index(rank), Index(samples.d)).transpose();
}

double FrobeniusNorm(std::span<const double> values) {
  double sum = 0.0;
  for (double v : values) sum += v * v;
  return std::sqrt(sum);
}

// Whether j may be among i's neighbours: not i, and more than `window`
// positions away in the stream.
bool Eligible(std::size_t i, std::size_t j, std::size_t window) {
  return (i > j ? i - j : j - i) > window;
}

MlkrNeighbors Nearest(const MlkrSamples& samples, std::span<const double> a,
                      std::size_t rank, std::size_t c, std::size_t window,
                      std::size_t threads) {
  const std::size_t n = samples.n;
  MlkrNeighbors out;
  out.begin.assign(n + 1, 0);
  if (c >= n - 1) {
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < n; ++j) {
        if (Eligible(i, j, window)) {
          out.ids.push_back(static_cast<std::uint32_t>(j));
        }
      }
      out.begin[i + 1] = out.ids.size();
    }
    return out;
  }
  const RowMatrix mapped = MapAll(samples, a, rank);
  return WindowedKnn({mapped.data(), static_cast<std::size_t>(mapped.size())},
                     rank, c, window, threads);
}

// The rows sqrt(lambda_k) w_k^T for the r leading eigenpairs of M = A^T A
// (A d x d): the paper's eq. (10).
std::vector<double> LeadingProjection(std::span<const double> a, std::size_t d,
                                      std::size_t rank) {
  const ConstRowMap map(a.data(), Index(d), Index(d));
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eigen(map.transpose() *
                                                             map);
  RowMatrix projected(Index(rank), Index(d));
  for (std::size_t r = 0; r < rank; ++r) {
    const Eigen::Index k = Index(d - 1 - r);  // ascending order
    projected.row(Index(r)) = std::sqrt(std::max(eigen.eigenvalues()(k), 0.0)) *
                              eigen.eigenvectors().col(k).transpose();
  }
  return {projected.data(), projected.data() + projected.size()};
}

// Gradient descent with the adaptive step from fit->a (fit->rank rows),
// counting into *fit (whose initial_loss the first evaluation sets).
absl::Status Descend(const MlkrSamples& samples, const MlkrFitOptions& options,
                     MlkrFit* fit) {
  const std::size_t rank = fit->rank;
  std::vector<double> gradient;
  std::vector<double> trial(fit->a.size());
  std::vector<double> trial_gradient;
  const auto refresh = [&]() {
    ++fit->refreshes;
    return Nearest(samples, fit->a, rank, options.neighbors,
                   options.exclude_within, options.threads);
  };
  MlkrNeighbors neighbors = refresh();
  double loss =
      MlkrLoss(samples, neighbors, fit->a, rank, &gradient, options.threads);
  if (++fit->steps == 1) fit->initial_loss = loss;
  if (!(FrobeniusNorm(gradient) > 0.0)) {
    // No neighbours (or a perfect fit): nothing to descend, no step known.
    fit->loss = loss;
    fit->step = 0.0;
    return absl::OkStatus();
  }
  // The first step moves A by 1% of its norm.
  double step =
      0.01 * FrobeniusNorm(fit->a) / std::max(FrobeniusNorm(gradient), 1e-300);
  std::size_t accepted_since_refresh = 0;
  while (fit->steps < options.max_steps) {
    if (options.stop.stop_requested()) {
      return absl::CancelledError("MLKR fit stopped");
    }
    for (std::size_t k = 0; k < trial.size(); ++k) {
      trial[k] = fit->a[k] - step * gradient[k];
    }
    const double trial_loss = MlkrLoss(samples, neighbors, trial, rank,
                                       &trial_gradient, options.threads);
    ++fit->steps;
    if (!(trial_loss < loss)) {
      step *= 0.5;
      if (step * FrobeniusNorm(gradient) < 1e-12 * FrobeniusNorm(fit->a)) {
        break;  // no step lowers it: a minimum for these neighbours
      }
      continue;
    }
    const double decrease = (loss - trial_loss) / loss;
    fit->a.swap(trial);
    gradient.swap(trial_gradient);
    loss = trial_loss;
    step *= 1.1;
    if (++accepted_since_refresh == options.refresh_every) {
      accepted_since_refresh = 0;
      neighbors = refresh();
      loss = MlkrLoss(samples, neighbors, fit->a, rank, &gradient,
                      options.threads);
      ++fit->steps;
      continue;
    }
    if (decrease < options.tolerance) break;
  }
  fit->loss = loss;
  fit->step = step;
  return absl::OkStatus();
}

}  // namespace

MlkrNeighbors NearestUnderMap(const MlkrSamples& samples,
                              std::span<const double> a, std::size_t rank,
                              std::size_t c, std::size_t window) {
  return Nearest(samples, a, rank, c, window, 1);
}

std::vector<double> InitialMlkrMap(const MlkrSamples& samples) {
  const std::size_t d = samples.d;
  const RowMatrix identity = RowMatrix::Identity(Index(d), Index(d));
  std::vector<double> a(identity.data(), identity.data() + identity.size());
  if (samples.n < 2) return a;
  const MlkrNeighbors nearest = Nearest(samples, a, d, 1, 0, 1);
  double sum = 0.0;
  for (std::size_t i = 0; i < samples.n; ++i) {
    const std::size_t j = nearest.of(i)[0];
    for (std::size_t k = 0; k < d; ++k) {
      const double difference = samples.x[i * d + k] - samples.x[j * d + k];
      sum += difference * difference;
    }
  }
  const double mean = sum / static_cast<double>(samples.n);
  if (mean > 0.0 && std::isfinite(mean)) {
    const double scale = 1.0 / std::sqrt(mean);
    for (double& v : a) v *= scale;
  }
  return a;
}

absl::StatusOr<MlkrFit> FitMlkr(const MlkrSamples& samples,
                                std::span<const double> initial,
                                const MlkrFitOptions& options) {
  const std::size_t d = samples.d;
  const std::size_t rank = options.rank == 0 ? d : options.rank;
  if (samples.n < 2) {
    return absl::InvalidArgumentError(
        absl::StrFormat("MLKR needs 2 samples or more, got %d", samples.n));
  }
  if (rank > d) {
    return absl::InvalidArgumentError(
        absl::StrFormat("MLKR rank %d exceeds the %d inputs", rank, d));
  }
  if (initial.size() != d * d) {
    return absl::InvalidArgumentError(
        absl::StrFormat("MLKR initial map has %d values, not d x d = %d",
                        initial.size(), d * d));
  }
  MlkrFit fit;
  fit.rank = d;
  fit.a.assign(initial.begin(), initial.end());
  if (absl::Status status = Descend(samples, options, &fit); !status.ok()) {
    return status;
  }
  if (rank == d) return fit;
  fit.a = LeadingProjection(fit.a, d, rank);
  fit.rank = rank;
  if (absl::Status status = Descend(samples, options, &fit); !status.ok()) {
    return status;
  }
  return fit;
}

}  // namespace streamreg
