#include "core/metric/mlkr_map.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace streamreg {

void MlkrMap::Install(std::size_t rank, std::vector<double> a, double step) {
  rank_ = rank;
  a_ = std::move(a);
  step_ = step;
  online_steps_ = 0;
}

void MlkrMap::Step(std::span<const double> gradient) {
  if (!known() || gradient.size() != a_.size()) return;
  double gradient_norm = 0.0, norm = 0.0;
  for (std::size_t k = 0; k < a_.size(); ++k) {
    gradient_norm += gradient[k] * gradient[k];
    norm += a_[k] * a_[k];
  }
  gradient_norm = std::sqrt(gradient_norm);
  if (!std::isfinite(gradient_norm) || gradient_norm == 0.0) return;
  // One sample moves A by at most kMaxRelativeStep of its norm.
  const double step =
      std::min(step_, kMaxRelativeStep * std::sqrt(norm) / gradient_norm);
  for (std::size_t k = 0; k < a_.size(); ++k) a_[k] -= step * gradient[k];
  ++online_steps_;
}

LearnedMetric MlkrMap::Metric(std::size_t dim, bool with_spectrum) const {
  LearnedMetric metric;
  metric.kind = MetricKind::kMlkr;
  metric.rank = rank_;
  metric.map = a_;
  metric.matrix.assign(dim * dim, 0.0);
  for (std::size_t r = 0; r < rank_; ++r) {
    const double* row = a_.data() + r * dim;
    for (std::size_t i = 0; i < dim; ++i) {
      for (std::size_t j = 0; j < dim; ++j) {
        metric.matrix[i * dim + j] += row[i] * row[j];
      }
    }
  }
  metric.weights.resize(dim);
  for (std::size_t i = 0; i < dim; ++i) {
    metric.weights[i] = metric.matrix[i * dim + i];
  }
  if (with_spectrum) DecomposeMatrix(dim, &metric);
  return metric;
}

std::vector<double> MlkrMap::Square(std::size_t dim) const {
  std::vector<double> square(dim * dim, 0.0);
  std::copy(a_.begin(), a_.end(), square.begin());
  return square;
}

void MlkrMap::Save(ByteWriter& out) const {
  out.U64(rank_);
  out.Doubles(a_);
  out.Double(step_);
  out.U64(online_steps_);
}

bool MlkrMap::Load(ByteReader& in, std::size_t dim) {
  rank_ = in.U64();
  a_ = in.Doubles();
  step_ = in.Double();
  online_steps_ = in.U64();
  const bool shaped =
      a_.empty() ? rank_ == 0
                 : rank_ >= 1 && rank_ <= dim && a_.size() == rank_ * dim;
  return in.ok() && shaped && std::isfinite(step_) && step_ >= 0.0;
}

}  // namespace streamreg
