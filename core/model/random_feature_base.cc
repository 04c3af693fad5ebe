#include "core/model/random_feature_base.h"

#include <algorithm>
#include <utility>

namespace streamreg {

RandomFeatureBase::RandomFeatureBase(MetricTransform transform,
                                     RandomFeatureRidge ridge)
    : active_{std::move(transform), std::move(ridge)},
      cache_weights_(active_.ridge.predictor()) {}

void RandomFeatureBase::Predict(std::span<const double> x,
                                std::span<double> out) const {
  thread_local std::vector<double> z;
  z.resize(active_.transform.dim());
  active_.transform.Apply(x, z);
  active_.ridge.Predict(z, out);
}

double RandomFeatureBase::RelativeVariance(std::span<const double> x) const {
  thread_local std::vector<double> z;
  z.resize(active_.transform.dim());
  active_.transform.Apply(x, z);
  return active_.ridge.RelativeVariance(z);
}

void RandomFeatureBase::Residual(const RandomFeaturePredictor& weights,
                                 std::span<const double> z,
                                 std::span<const double> y,
                                 std::span<double> out) {
  weights.Predict(z, out);
  for (std::size_t t = 0; t < out.size(); ++t) out[t] = y[t] - out[t];
}

const MetricTransform& RandomFeatureBase::SweepTransform() const {
  return sweep_->incoming ? sweep_->incoming->transform : active_.transform;
}

void RandomFeatureBase::Learn(std::span<const double> x,
                              std::span<const double> y,
                              std::optional<std::size_t> slot,
                              const SampleStore& store) {
  const std::size_t m = num_targets();
  thread_local std::vector<double> z;
  z.resize(active_.transform.dim());
  // Its residual under the cache weights, then the ridge learns it.
  active_.transform.Apply(x, z);
  if (slot.has_value()) {
    if (residuals_.size() < (*slot + 1) * m) residuals_.resize((*slot + 1) * m);
    Residual(cache_weights_, z, y, {residuals_.data() + *slot * m, m});
  }
  active_.ridge.Add(z, y);
  ++learned_;
  if (sweep_.has_value()) {
    if (sweep_->incoming) {
      sweep_->incoming->transform.Apply(x, z);
      sweep_->incoming->ridge.Add(z, y);
    }
    if (slot.has_value()) {
      std::vector<double>& next = sweep_->residuals;
      if (next.size() < (*slot + 1) * m) next.resize((*slot + 1) * m);
      SweepTransform().Apply(x, z);
      Residual(sweep_->weights, z, y, {next.data() + *slot * m, m});
    }
  } else if (learned_ >=
             cache_taken_at_ +
                 std::max<std::size_t>(1, store.size() / kSweepGrowth)) {
    StartSweep(std::nullopt, store);
  }
  AdvanceSweep(store);
}

void RandomFeatureBase::Replace(MetricTransform transform,
                                RandomFeatureRidge ridge,
                                const SampleStore& store) {
  StartSweep(Fit{std::move(transform), std::move(ridge)}, store);
  AdvanceSweep(store);
}

void RandomFeatureBase::StartSweep(std::optional<Fit> incoming,
                                   const SampleStore& store) {
  RandomFeaturePredictor weights =
      incoming ? incoming->ridge.predictor() : active_.ridge.predictor();
  sweep_.emplace(Sweep{std::move(incoming), std::move(weights),
                       std::vector<double>(store.size() * num_targets()), 0,
                       store.size(), learned_});
}

void RandomFeatureBase::AdvanceSweep(const SampleStore& store) {
  if (!sweep_.has_value()) return;
  const std::size_t m = num_targets();
  Sweep& sweep = *sweep_;
  thread_local std::vector<double> z;
  z.resize(active_.transform.dim());
  const MetricTransform& transform = SweepTransform();
  const std::size_t stop = std::min(sweep.end, sweep.next + kSweepPace);
  for (; sweep.next < stop; ++sweep.next) {
    const std::size_t slot = sweep.next;
    transform.Apply({store.x(slot), store.dim()}, z);
    Residual(sweep.weights, z, {store.y(slot), m},
             {sweep.residuals.data() + slot * m, m});
  }
  if (sweep.next < sweep.end) return;
  if (sweep.incoming) active_ = std::move(*sweep.incoming);
  cache_weights_ = std::move(sweep.weights);
  residuals_ = std::move(sweep.residuals);
  cache_taken_at_ = sweep.taken_at;
  sweep_.reset();
  ++sweeps_;
}

void RandomFeatureBase::SaveFit(const Fit& fit, ByteWriter& out) {
  fit.transform.Save(out);
  fit.ridge.Save(out);
}

std::optional<RandomFeatureBase::Fit> RandomFeatureBase::LoadFit(
    ByteReader& in, std::size_t dim, std::size_t num_targets) {
  std::optional<MetricTransform> transform = MetricTransform::Load(in, dim);
  if (!transform.has_value()) return std::nullopt;
  std::optional<RandomFeatureRidge> ridge = RandomFeatureRidge::Read(in);
  if (!ridge.has_value() || ridge->dim() != transform->dim() ||
      ridge->num_targets() != num_targets) {
    return std::nullopt;
  }
  return Fit{*std::move(transform), *std::move(ridge)};
}

void RandomFeatureBase::Save(ByteWriter& out) const {
  SaveFit(active_, out);
  out.Doubles(cache_weights_.weights());
  out.Doubles(residuals_);
  out.U64(cache_taken_at_);
  out.U64(learned_);
  out.U64(sweeps_);
  out.U8(sweep_.has_value() ? 1 : 0);
  if (!sweep_.has_value()) return;
  out.U8(sweep_->incoming ? 1 : 0);
  if (sweep_->incoming) SaveFit(*sweep_->incoming, out);
  out.Doubles(sweep_->weights.weights());
  out.Doubles(sweep_->residuals);
  out.U64(sweep_->next);
  out.U64(sweep_->end);
  out.U64(sweep_->taken_at);
}

std::optional<RandomFeatureBase> RandomFeatureBase::Load(
    ByteReader& in, std::size_t dim, std::size_t num_targets) {
  std::optional<Fit> active = LoadFit(in, dim, num_targets);
  if (!active.has_value()) return std::nullopt;
  RandomFeatureBase base(std::move(active->transform),
                         std::move(active->ridge));
  // Weights of the same map: their number must be the map's.
  const auto load_weights = [&in](RandomFeaturePredictor* weights) {
    const std::vector<double> saved = in.Doubles();
    if (!in.ok() || saved.size() != weights->weights().size()) return false;
    std::copy(saved.begin(), saved.end(), weights->weights().begin());
    return true;
  };
  const auto load_residuals = [&in, num_targets](std::vector<double>* out) {
    *out = in.Doubles();
    return in.ok() && out->size() % num_targets == 0;
  };
  if (!load_weights(&base.cache_weights_) ||
      !load_residuals(&base.residuals_)) {
    return std::nullopt;
  }
  base.cache_taken_at_ = in.U64();
  base.learned_ = in.U64();
  base.sweeps_ = in.U64();
  const std::uint8_t sweeping = in.U8();
  if (!in.ok() || sweeping > 1) return std::nullopt;
  if (sweeping == 0) return base;
  const std::uint8_t replacing = in.U8();
  if (!in.ok() || replacing > 1) return std::nullopt;
  std::optional<Fit> incoming;
  if (replacing == 1) {
    incoming = LoadFit(in, dim, num_targets);
    if (!incoming.has_value()) return std::nullopt;
  }
  RandomFeaturePredictor weights =
      incoming ? incoming->ridge.predictor() : base.active_.ridge.predictor();
  Sweep sweep{std::move(incoming), std::move(weights), {}, 0, 0, 0};
  if (!load_weights(&sweep.weights) || !load_residuals(&sweep.residuals)) {
    return std::nullopt;
  }
  sweep.next = in.U64();
  sweep.end = in.U64();
  sweep.taken_at = in.U64();
  if (!in.ok() || sweep.next > sweep.end || sweep.taken_at > base.learned_ ||
      sweep.end * num_targets > sweep.residuals.size()) {
    return std::nullopt;
  }
  base.sweep_.emplace(std::move(sweep));
  return base;
}

}  // namespace streamreg
