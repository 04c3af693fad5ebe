#include "core/regression/random_feature_sums.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "Eigen/Core"
#include "core/regression/lower_triangle.h"

namespace streamreg {
namespace {

using MatrixMap = Eigen::Map<Eigen::MatrixXd>;

}  // namespace

RandomFeatureSums::RandomFeatureSums(RandomFeaturePredictor map,
                                     double forgetting)
    : map_(std::move(map)),
      forgetting_(forgetting),
      gram_(map_.num_features() * map_.num_features(), 0.0),
      cross_(map_.num_features() * map_.num_targets(), 0.0),
      squares_(map_.num_targets(), 0.0),
      block_(map_.num_features() * kBatch, 0.0) {}

void RandomFeatureSums::Add(std::span<const double> z,
                            std::span<const double> y) {
  const std::size_t f = map_.num_features();
  const std::size_t column = waiting_;
  // The features go straight into the block.
  map_.Features(z, {block_.data() + column * f, f});
  AddFeatures({block_.data() + column * f, f}, y);
}

void RandomFeatureSums::AddFeatures(std::span<const double> phi,
                                    std::span<const double> y) {
  const std::size_t f_size = map_.num_features();
  const auto f = static_cast<Eigen::Index>(f_size);
  const auto m = static_cast<Eigen::Index>(map_.num_targets());
  const std::size_t column = waiting_;
  double* const slot = block_.data() + column * f_size;
  if (phi.data() != slot) std::copy(phi.begin(), phi.end(), slot);
  MatrixMap cross(cross_.data(), f, m);
  Eigen::Map<Eigen::VectorXd> squares(squares_.data(), m);
  if (forgetting_ != 1.0) {
    cross *= forgetting_;
    squares *= forgetting_;
  }
  const Eigen::Map<const Eigen::VectorXd> features(slot, f);
  const Eigen::Map<const Eigen::VectorXd> targets(y.data(), m);
  cross.noalias() += features * targets.transpose();
  squares.array() += targets.array().square();
  weight_ = forgetting_ * weight_ + 1.0;
  ++count_;
  if (++waiting_ < kBatch) return;
  AddBlock(gram_, kBatch);
  waiting_ = 0;
}

void RandomFeatureSums::AddBlock(std::span<double> lower,
                                 std::size_t columns) const {
  const auto f = static_cast<Eigen::Index>(map_.num_features());
  const auto k = static_cast<Eigen::Index>(columns);
  MatrixMap gram(lower.data(), f, f);
  if (forgetting_ == 1.0) {
    gram.selfadjointView<Eigen::Lower>().rankUpdate(
        Eigen::Map<const Eigen::MatrixXd>(block_.data(), f, k));
    return;
  }
  // Sample c of the block weighs forgetting^(k - 1 - c) against the last:
  // its column scaled by the root of that.
  gram.triangularView<Eigen::Lower>() *=
      std::pow(forgetting_, static_cast<double>(columns));
  Eigen::MatrixXd weighted =
      Eigen::Map<const Eigen::MatrixXd>(block_.data(), f, k);
  for (Eigen::Index c = 0; c < k; ++c) {
    weighted.col(c) *=
        std::sqrt(std::pow(forgetting_, static_cast<double>(k - 1 - c)));
  }
  gram.selfadjointView<Eigen::Lower>().rankUpdate(weighted);
}

void RandomFeatureSums::Gram(std::span<double> lower) const {
  const std::size_t f = map_.num_features();
  for (std::size_t j = 0; j < f; ++j) {
    std::copy(gram_.begin() + static_cast<std::ptrdiff_t>(j * f + j),
              gram_.begin() + static_cast<std::ptrdiff_t>((j + 1) * f),
              lower.begin() + static_cast<std::ptrdiff_t>(j * f + j));
  }
  if (waiting_ > 0) AddBlock(lower, waiting_);
}

void RandomFeatureSums::Save(ByteWriter& out) const {
  const std::size_t f = map_.num_features();
  out.U64(count_);
  out.Double(weight_);
  SaveLowerTriangle(gram_, f, out);
  out.RawDoubles(cross_);
  out.RawDoubles(squares_);
  out.U64(waiting_);
  out.RawDoubles({block_.data(), waiting_ * f});
}

bool RandomFeatureSums::Load(ByteReader& in) {
  const std::size_t f = map_.num_features();
  count_ = in.U64();
  weight_ = in.Double();
  if (!in.ok() || !LoadLowerTriangle(in, f, gram_)) return false;
  in.RawDoubles(cross_);
  in.RawDoubles(squares_);
  waiting_ = in.U64();
  if (!in.ok() || waiting_ >= kBatch || waiting_ > count_) return false;
  in.RawDoubles({block_.data(), waiting_ * f});
  return in.ok();
}

RandomFeatureSums RandomFeatureSums::FromTotals(
    RandomFeaturePredictor map, double forgetting, std::size_t count,
    double weight, std::vector<double> gram, std::vector<double> cross,
    std::vector<double> squares) {
  RandomFeatureSums sums(std::move(map), forgetting);
  sums.count_ = count;
  sums.weight_ = weight;
  sums.gram_ = std::move(gram);
  sums.cross_ = std::move(cross);
  sums.squares_ = std::move(squares);
  return sums;
}

}  // namespace streamreg
