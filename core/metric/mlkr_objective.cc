#include "core/metric/mlkr_objective.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "Eigen/Core"
#include "core/base/parallel_parts.h"

namespace streamreg {
namespace {

using RowMatrix =
    Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstRowMap = Eigen::Map<const RowMatrix>;
using ConstVectorMap = Eigen::Map<const Eigen::VectorXd>;

Eigen::Index Index(std::size_t n) { return static_cast<Eigen::Index>(n); }

// One point's neighbours as rows (their targets and mapped inputs, in
// list order), and the buffers of its term, reused from point to point.
struct PointTerm {
  PointTerm(std::size_t m, std::size_t rank) : m(m), rank(rank) {}

  std::size_t m;
  std::size_t rank;
  std::vector<const double*> y;       // m each
  std::vector<const double*> mapped;  // rank each
  std::vector<double> weights;        // p_j
  std::vector<double> estimate;       // yhat_t
  // c_ij = p_ij sum_t (yhat_it - y_it)(yhat_it - y_jt): the gradient is
  // 4 A sum_i sum_j c_ij x_ij x_ij^T.
  std::vector<double> coefficients;

  // Returns sum_t (y_it - yhat_it)^2 for the point with targets y_i mapped
  // to z_i, and with `gradient` sets the coefficients c_ij.
  double Evaluate(const double* yi, const double* zi, bool gradient);
};

double PointTerm::Evaluate(const double* yi, const double* zi, bool gradient) {
  const std::size_t count = y.size();
  if (count == 0) return 0.0;
  std::vector<double>& p = weights;
  p.resize(count);
  double nearest = std::numeric_limits<double>::infinity();
  for (std::size_t s = 0; s < count; ++s) {
    double squared = 0.0;
    for (std::size_t r = 0; r < rank; ++r) {
      const double difference = zi[r] - mapped[s][r];
      squared += difference * difference;
    }
    p[s] = squared;
    nearest = std::min(nearest, squared);
  }
  // k_ij / k_i,nearest: the same p_ij, and the nearest weighs 1.
  double total = 0.0;
  for (double& weight : p) {
    weight = std::exp(-(weight - nearest));
    total += weight;
  }
  for (double& weight : p) weight /= total;
  estimate.assign(m, 0.0);
  for (std::size_t s = 0; s < count; ++s) {
    for (std::size_t t = 0; t < m; ++t) estimate[t] += p[s] * y[s][t];
  }
  double loss = 0.0;
  for (std::size_t t = 0; t < m; ++t) {
    const double error = estimate[t] - yi[t];
    loss += error * error;
  }
  if (!gradient) return loss;
  coefficients.resize(count);
  for (std::size_t s = 0; s < count; ++s) {
    double sum = 0.0;
    for (std::size_t t = 0; t < m; ++t) {
      sum += (estimate[t] - yi[t]) * (estimate[t] - y[s][t]);
    }
    coefficients[s] = p[s] * sum;
  }
  return loss;
}

}  // namespace

double MlkrLoss(const MlkrSamples& samples, const MlkrNeighbors& neighbors,
                std::span<const double> a, std::size_t rank,
                std::vector<double>* gradient, std::size_t threads) {
  const std::size_t n = samples.n;
  const std::size_t d = samples.d;
  const std::size_t m = samples.m;
  const ConstRowMap x(samples.x.data(), Index(n), Index(d));
  const ConstRowMap map(a.data(), Index(rank), Index(d));
  // Every point mapped once: Z = X A^T.
  const RowMatrix mapped = x * map.transpose();
  threads = std::max<std::size_t>(threads, 1);
  // The scatter sum_ij c_ij x_ij x_ij^T is
  //   X^T diag(r + s) X - X^T W - W^T X,
  // r_i = sum_j c_ij, s_j = sum_i c_ij, w_i = sum_j c_ij x_j: O(c d) per
  // point instead of O(c d^2). r and W are written by the thread that owns
  // the point, s summed per thread.
  const bool wants_gradient = gradient != nullptr;
  std::vector<double> row_sums(wants_gradient ? n : 0, 0.0);
  RowMatrix weighted(wants_gradient ? Index(n) : 0, Index(d));
  std::vector<std::vector<double>> column_sums(threads);
  std::vector<double> losses(threads, 0.0);
  const auto run = [&](std::size_t part) {
    PointTerm term(m, rank);
    if (wants_gradient) column_sums[part].assign(n, 0.0);
    double loss = 0.0;
    for (std::size_t i = PartBegin(n, threads, part),
                     end = PartBegin(n, threads, part + 1);
         i < end; ++i) {
      const std::span<const std::uint32_t> listed = neighbors.of(i);
      term.y.resize(listed.size());
      term.mapped.resize(listed.size());
      for (std::size_t s = 0; s < listed.size(); ++s) {
        const std::size_t j = listed[s];
        term.y[s] = samples.y.data() + j * m;
        term.mapped[s] = mapped.data() + j * rank;
      }
      loss += term.Evaluate(samples.y.data() + i * m, mapped.data() + i * rank,
                            wants_gradient);
      if (!wants_gradient) continue;
      auto w = weighted.row(Index(i));
      w.setZero();
      double row_sum = 0.0;
      for (std::size_t s = 0; s < listed.size(); ++s) {
        const double c = term.coefficients[s];
        row_sum += c;
        column_sums[part][listed[s]] += c;
        w += c * x.row(Index(listed[s]));
      }
      row_sums[i] = row_sum;
    }
    losses[part] = loss;
  };
  RunParts(threads, run);
  double loss = 0.0;
  for (double part : losses) loss += part;
  if (wants_gradient) {
    Eigen::VectorXd diagonal = ConstVectorMap(row_sums.data(), Index(n));
    for (const std::vector<double>& part : column_sums) {
      diagonal += ConstVectorMap(part.data(), Index(n));
    }
    const RowMatrix cross = x.transpose() * weighted;
    const RowMatrix scatter =
        x.transpose() * diagonal.asDiagonal() * x - cross - cross.transpose();
    const RowMatrix result = 4.0 * map * scatter;
    gradient->assign(result.data(), result.data() + result.size());
  }
  return loss;
}

double MlkrPointLoss(std::span<const double> x, std::span<const double> y,
                     std::span<const double* const> neighbor_x,
                     std::span<const double* const> neighbor_y,
                     std::span<const double> a, std::size_t rank,
                     std::vector<double>* gradient) {
  const std::size_t d = x.size();
  const std::size_t count = neighbor_x.size();
  const ConstRowMap map(a.data(), Index(rank), Index(d));
  PointTerm term(y.size(), rank);
  term.y.assign(neighbor_y.begin(), neighbor_y.end());
  RowMatrix mapped(Index(count), Index(rank));
  term.mapped.resize(count);
  for (std::size_t s = 0; s < count; ++s) {
    mapped.row(Index(s)) =
        (map * ConstVectorMap(neighbor_x[s], Index(d))).transpose();
    term.mapped[s] = mapped.data() + s * rank;
  }
  const Eigen::VectorXd z = map * ConstVectorMap(x.data(), Index(d));
  const double loss = term.Evaluate(y.data(), z.data(), gradient != nullptr);
  if (gradient == nullptr) return loss;
  // sum_j c_j x_ij x_ij^T, one row of differences per neighbour.
  RowMatrix differences(Index(count), Index(d));
  for (std::size_t s = 0; s < count; ++s) {
    differences.row(Index(s)) =
        ConstVectorMap(x.data(), Index(d)).transpose() -
        ConstVectorMap(neighbor_x[s], Index(d)).transpose();
  }
  const ConstVectorMap c(term.coefficients.data(), Index(count));
  const RowMatrix scatter =
      differences.transpose() * (c.asDiagonal() * differences);
  const RowMatrix result = 4.0 * map * scatter;
  gradient->resize(rank * d, 0.0);
  for (std::size_t k = 0; k < rank * d; ++k) {
    (*gradient)[k] += result.data()[k];
  }
  return loss;
}

}  // namespace streamreg
