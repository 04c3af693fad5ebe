#include "core/metric/mlkr_objective.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <thread>

#include "Eigen/Core"

namespace streamreg {
namespace {

using RowMatrix =
    Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstRowMap = Eigen::Map<const RowMatrix>;
using ConstVectorMap = Eigen::Map<const Eigen::VectorXd>;

Eigen::Index Index(std::size_t n) { return static_cast<Eigen::Index>(n); }

// One point's neighbours as rows (their inputs, targets and mapped
// inputs, in list order), and the buffers of its term, reused from point
// to point.
struct PointTerm {
  PointTerm(std::size_t d, std::size_t m, std::size_t rank)
      : d(d), m(m), rank(rank) {}

  std::size_t d;
  std::size_t m;
  std::size_t rank;
  std::vector<const double*> x;      // d each
  std::vector<const double*> y;      // m each
  RowMatrix mapped;                  // count x rank
  std::vector<double> weights;       // p_j
  std::vector<double> estimate;      // yhat_t
  std::vector<double> coefficients;  // c_j
  RowMatrix differences;             // x_i - x_j, one row per neighbour

  // Returns sum_t (y_it - yhat_it)^2 for the point (x_i, y_i) mapped to
  // z_i; with `scatter` non-null, adds sum_j c_ij x_ij x_ij^T to it (d x
  // d): the gradient is 4 A times the sum over the points.
  double Evaluate(const double* xi, const double* yi, const double* zi,
                  RowMatrix* scatter);
};

double PointTerm::Evaluate(const double* xi, const double* yi, const double* zi,
                           RowMatrix* scatter) {
  const std::size_t count = x.size();
  if (count == 0) return 0.0;
  std::vector<double>& p = weights;
  p.resize(count);
  double nearest = std::numeric_limits<double>::infinity();
  for (std::size_t s = 0; s < count; ++s) {
    double squared = 0.0;
    for (std::size_t r = 0; r < rank; ++r) {
      const double difference = zi[r] - mapped(Index(s), Index(r));
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
  if (scatter == nullptr) return loss;
  // c_ij = p_ij sum_t (yhat_it - y_it)(yhat_it - y_jt).
  coefficients.resize(count);
  differences.resize(Index(count), Index(d));
  for (std::size_t s = 0; s < count; ++s) {
    double sum = 0.0;
    for (std::size_t t = 0; t < m; ++t) {
      sum += (estimate[t] - yi[t]) * (estimate[t] - y[s][t]);
    }
    coefficients[s] = p[s] * sum;
    for (std::size_t i = 0; i < d; ++i) {
      differences(Index(s), Index(i)) = xi[i] - x[s][i];
    }
  }
  const ConstVectorMap c(coefficients.data(), Index(count));
  scatter->noalias() +=
      differences.transpose() * (c.asDiagonal() * differences);
  return loss;
}

}  // namespace

double MlkrLoss(const MlkrSamples& samples, const MlkrNeighbors& neighbors,
                std::span<const double> a, std::size_t rank,
                std::vector<double>* gradient, std::size_t threads) {
  const std::size_t n = samples.n;
  const std::size_t d = samples.d;
  const std::size_t m = samples.m;
  const ConstRowMap map(a.data(), Index(rank), Index(d));
  // Every point mapped once: Z = X A^T.
  const RowMatrix mapped =
      ConstRowMap(samples.x.data(), Index(n), Index(d)) * map.transpose();
  threads = std::clamp<std::size_t>(threads, 1, std::max<std::size_t>(n, 1));
  std::vector<double> losses(threads, 0.0);
  std::vector<RowMatrix> scatters(threads);
  const auto run = [&](std::size_t part) {
    PointTerm term(d, m, rank);
    RowMatrix* scatter = nullptr;
    if (gradient != nullptr) {
      scatters[part] = RowMatrix::Zero(Index(d), Index(d));
      scatter = &scatters[part];
    }
    double loss = 0.0;
    for (std::size_t i = n * part / threads; i < n * (part + 1) / threads;
         ++i) {
      const std::span<const std::uint32_t> listed = neighbors.of(i);
      term.x.resize(listed.size());
      term.y.resize(listed.size());
      term.mapped.resize(Index(listed.size()), Index(rank));
      for (std::size_t s = 0; s < listed.size(); ++s) {
        const std::size_t j = listed[s];
        term.x[s] = samples.x.data() + j * d;
        term.y[s] = samples.y.data() + j * m;
        term.mapped.row(Index(s)) = mapped.row(Index(j));
      }
      loss += term.Evaluate(samples.x.data() + i * d, samples.y.data() + i * m,
                            mapped.data() + i * rank, scatter);
    }
    losses[part] = loss;
  };
  {
    std::vector<std::jthread> workers;
    for (std::size_t part = 1; part < threads; ++part) {
      workers.emplace_back(run, part);
    }
    run(0);
  }
  double loss = 0.0;
  for (double part : losses) loss += part;
  if (gradient != nullptr) {
    RowMatrix scatter = RowMatrix::Zero(Index(d), Index(d));
    for (const RowMatrix& part : scatters) scatter += part;
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
  PointTerm term(d, y.size(), rank);
  term.x.assign(neighbor_x.begin(), neighbor_x.end());
  term.y.assign(neighbor_y.begin(), neighbor_y.end());
  term.mapped.resize(Index(count), Index(rank));
  for (std::size_t s = 0; s < count; ++s) {
    term.mapped.row(Index(s)) =
        (map * ConstVectorMap(neighbor_x[s], Index(d))).transpose();
  }
  const Eigen::VectorXd z = map * ConstVectorMap(x.data(), Index(d));
  RowMatrix scatter;
  if (gradient != nullptr) scatter = RowMatrix::Zero(Index(d), Index(d));
  const double loss = term.Evaluate(x.data(), y.data(), z.data(),
                                    gradient != nullptr ? &scatter : nullptr);
  if (gradient != nullptr) {
    gradient->resize(rank * d, 0.0);
    const RowMatrix result = 4.0 * map * scatter;
    for (std::size_t k = 0; k < rank * d; ++k) {
      (*gradient)[k] += result.data()[k];
    }
  }
  return loss;
}

}  // namespace streamreg
