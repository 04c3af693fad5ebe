#include "core/model/random_feature_base.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/regression/lower_triangle.h"

namespace streamreg {

RandomFeatureBase::RandomFeatureBase(MetricTransform transform,
                                     RandomFeatureRidge ridge)
    : active_{std::move(transform), std::move(ridge)},
      published_noise_(NoiseScales(active_.ridge)),
      residuals_(active_.ridge.num_targets()),
      cache_weights_(active_.ridge.predictor()) {}

std::vector<double> RandomFeatureBase::NoiseScales(
    const RandomFeatureRidge& ridge) {
  std::vector<double> scales(ridge.num_targets());
  for (std::size_t t = 0; t < scales.size(); ++t) {
    scales[t] = std::sqrt(ridge.NoiseVariance(t));
  }
  return scales;
}

void RandomFeatureBase::Predict(std::span<const double> x,
                                std::span<double> out,
                                std::span<double> variance) const {
  thread_local std::vector<double> z;
  thread_local std::vector<double> phi;
  z.resize(active_.transform.dim());
  active_.transform.Apply(x, z);
  phi.resize(cache_weights_.num_features());
  cache_weights_.Features(z, phi);
  cache_weights_.PredictFromFeatures(phi, out);
  if (variance.empty()) return;
  const double relative = cache_weights_.RelativeVarianceFromFeatures(phi);
  for (std::size_t t = 0; t < variance.size(); ++t) {
    variance[t] = published_noise_[t] * published_noise_[t] * relative;
  }
}

void RandomFeatureBase::Residual(const RandomFeaturePredictor& weights,
                                 std::span<const double> z,
                                 std::span<const double> y,
                                 std::span<double> out) {
  weights.Predict(z, out);
  for (std::size_t t = 0; t < out.size(); ++t) out[t] = y[t] - out[t];
}

void RandomFeatureBase::ResidualFromFeatures(
    const RandomFeaturePredictor& weights, std::span<const double> phi,
    std::span<const double> y, std::span<double> out) {
  weights.PredictFromFeatures(phi, out);
  for (std::size_t t = 0; t < out.size(); ++t) out[t] = y[t] - out[t];
}

const MetricTransform& RandomFeatureBase::coming_transform() const {
  return sweep_.has_value() && sweep_->incoming ? sweep_->incoming->transform
                                                : active_.transform;
}

void RandomFeatureBase::Prepare(std::span<const double> x,
                                std::span<const double> y,
                                const SampleStore& store) {
  retired_.reset();  // the cache a sweep replaced, freed outside Commit
  const std::size_t m = num_targets();
  thread_local std::vector<double> z;
  z.resize(active_.transform.dim());
  // Its residual under the cache weights, then the ridge learns it. (The
  // features serve a sweep of the same fit too: its weights share the map.)
  active_.transform.Apply(x, z);
  thread_local std::vector<double> phi;
  phi.resize(cache_weights_.num_features());
  cache_weights_.Features(z, phi);
  prepared_cached_.resize(m);
  ResidualFromFeatures(cache_weights_, phi, y, prepared_cached_);
  active_.ridge.AddFeatures(phi, y);
  if (sweep_.has_value() && sweep_->incoming) {
    sweep_->incoming->transform.Apply(x, z);
    sweep_->incoming->ridge.Add(z, y);
  }
  const std::uint64_t learned = learned_ + 1;
  if (!sweep_.has_value() &&
      learned >= cache_taken_at_ +
                     std::max({std::size_t{1}, store.size() / kSweepGrowth,
                               SolveGap(active_.ridge)})) {
    StartSweep(std::nullopt, store, learned);
  }
  // (After the sweep's solve, which begins the noise estimate's next
  // interval.)
  prepared_noise_ = NoiseScales(active_.ridge);
  prepared_swept_.clear();
  if (sweep_.has_value()) {
    // Its residual under the sweep's weights too, for its slot (which the
    // sweep may have taken already, from the sample it replaces).
    prepared_swept_.resize(m);
    if (sweep_->incoming) {
      // (z is in the incoming fit's coordinates since its ridge learned.)
      Residual(sweep_->weights, z, y, prepared_swept_);
    } else {
      ResidualFromFeatures(sweep_->weights, phi, y, prepared_swept_);
    }
  }
  AdvanceSweep(store);
}

void RandomFeatureBase::Commit(std::optional<std::size_t> slot,
                               const SampleStore& store) {
  ++learned_;
  std::swap(published_noise_, prepared_noise_);
  if (slot.has_value()) {
    if (*slot >= residuals_.size()) residuals_.GrowTo(*slot + 1);
    std::copy(prepared_cached_.begin(), prepared_cached_.end(),
              residuals_.WritableRow(*slot));
  }
  if (!sweep_.has_value()) return;
  Sweep& sweep = *sweep_;
  if (slot.has_value()) {
    if (*slot >= sweep.residuals.size()) sweep.residuals.GrowTo(*slot + 1);
    std::copy(prepared_swept_.begin(), prepared_swept_.end(),
              sweep.residuals.Row(*slot));
  }
  if (sweep.next < sweep.end) return;
  TakeOverSweep(store);
}

void RandomFeatureBase::CompleteSweep(const SampleStore& store) {
  if (!sweep_.has_value()) return;
  while (sweep_->next < sweep_->end) AdvanceSweep(store);
  TakeOverSweep(store);
}

void RandomFeatureBase::TakeOverSweep(const SampleStore& store) {
  Sweep& sweep = *sweep_;
  // Taken over: the new residuals (and fit), the old ones freed later.
  sweep.residuals.GrowTo(store.size());
  if (sweep.incoming) {
    ++replacements_;
    active_ = std::move(*sweep.incoming);
    published_noise_ = NoiseScales(active_.ridge);
  }
  cache_weights_ = std::move(sweep.weights);
  std::swap(residuals_, sweep.residuals);
  retired_.emplace(std::move(sweep.residuals));
  cache_taken_at_ = sweep.taken_at;
  sweep_.reset();
  ++sweeps_;
}

std::size_t RandomFeatureBase::SolveGap(const RandomFeatureRidge& ridge) {
  return ridge.num_features() / kSolveGapDivisor;
}

void RandomFeatureBase::Learn(std::span<const double> x,
                              std::span<const double> y,
                              std::optional<std::size_t> slot,
                              const SampleStore& store) {
  Prepare(x, y, store);
  Commit(slot, store);
}

void RandomFeatureBase::Replace(RandomFeatureFit fit,
                                const SampleStore& store) {
  StartSweep(std::move(fit), store, learned_);
}

void RandomFeatureBase::StartSweep(std::optional<Fit> incoming,
                                   const SampleStore& store,
                                   std::uint64_t taken_at) {
  // The weights over every sample learned (if a fit's A cannot be
  // factored, its weights as they were).
  RandomFeatureRidge& ridge = incoming ? incoming->ridge : active_.ridge;
  ridge.Solve();
  RandomFeaturePredictor weights = ridge.predictor();
  ChunkedRows<double> residuals(num_targets());
  // Room for what the store may grow by before the sweep ends.
  residuals.Reserve(store.size() + store.size() / kSweepPace + kSweepPace);
  residuals.GrowTo(store.size());
  sweep_.emplace(Sweep{std::move(incoming), std::move(weights),
                       std::move(residuals), 0, store.size(), taken_at});
}

void RandomFeatureBase::AdvanceSweep(const SampleStore& store) {
  if (!sweep_.has_value()) return;
  const std::size_t m = num_targets();
  Sweep& sweep = *sweep_;
  thread_local std::vector<double> z;
  const MetricTransform& transform = coming_transform();
  z.resize(transform.dim());
  const std::size_t stop = std::min(sweep.end, sweep.next + kSweepPace);
  for (; sweep.next < stop; ++sweep.next) {
    const std::size_t slot = sweep.next;
    transform.Apply({store.x(slot), store.dim()}, z);
    Residual(sweep.weights, z, {store.y(slot), m},
             {sweep.residuals.Row(slot), m});
  }
}

void RandomFeatureBase::SaveRows(const ChunkedRows<double>& rows,
                                 ByteWriter& out) {
  out.U64(rows.size());
  for (std::size_t r = 0; r < rows.size(); ++r) {
    out.RawDoubles({rows.Row(r), rows.width()});
  }
}

bool RandomFeatureBase::LoadRows(ByteReader& in, ChunkedRows<double>* rows) {
  const std::uint64_t size = in.U64();
  // Refused before any allocation if the record cannot hold them.
  if (!in.ok() || size > in.remaining() / (rows->width() * sizeof(double))) {
    return false;
  }
  rows->GrowTo(size);
  for (std::size_t r = 0; r < size; ++r) {
    in.RawDoubles({rows->Row(r), rows->width()});
  }
  return in.ok();
}

void RandomFeatureBase::Save(ByteWriter& out) const {
  active_.Save(out);
  SaveWeights(cache_weights_, out);
  SaveRows(residuals_, out);
  out.U64(cache_taken_at_);
  out.U64(learned_);
  out.U64(sweeps_);
  out.U64(replacements_);
  out.U8(sweep_.has_value() ? 1 : 0);
  if (!sweep_.has_value()) return;
  out.U8(sweep_->incoming ? 1 : 0);
  if (sweep_->incoming) sweep_->incoming->Save(out);
  SaveWeights(sweep_->weights, out);
  SaveRows(sweep_->residuals, out);
  out.U64(sweep_->next);
  out.U64(sweep_->end);
  out.U64(sweep_->taken_at);
}

void RandomFeatureBase::SaveWeights(const RandomFeaturePredictor& weights,
                                    ByteWriter& out) {
  out.Doubles(weights.weights());
  SaveLowerTriangle(weights.factor(), weights.num_features(), out);
}

bool RandomFeatureBase::LoadWeights(ByteReader& in,
                                    const SavedBaseFormat& format,
                                    RandomFeaturePredictor* weights) {
  // Weights of the same map: their number must be the map's; so must
  // their factor's (F x F), if saved (without, the factor stays the
  // ridge's as loaded).
  const std::vector<double> saved = in.Doubles();
  if (!in.ok() || saved.size() != weights->weights().size()) return false;
  std::copy(saved.begin(), saved.end(), weights->weights().begin());
  if (!format.with_factors) return true;
  const std::size_t f = weights->num_features();
  std::vector<double> factor(f * f);
  if (format.ridge == RidgeFormat::kSums) {
    if (!LoadLowerTriangle(in, f, factor)) return false;
  } else {
    const std::vector<double> root = in.Doubles();
    if (!in.ok() || root.size() != f * f) return false;
    factor = RandomFeatureRidge::FactorFromRoot(root, f);
    if (factor.empty()) return false;
  }
  weights->SetFactor(std::move(factor));
  return true;
}

std::optional<RandomFeatureBase> RandomFeatureBase::Load(
    ByteReader& in, std::size_t dim, std::size_t num_targets,
    const SavedBaseFormat& format) {
  std::optional<Fit> active = Fit::Load(in, dim, num_targets, format.ridge);
  if (!active.has_value()) return std::nullopt;
  RandomFeatureBase base(std::move(active->transform),
                         std::move(active->ridge));
  if (!LoadWeights(in, format, &base.cache_weights_) ||
      !LoadRows(in, &base.residuals_)) {
    return std::nullopt;
  }
  base.cache_taken_at_ = in.U64();
  base.learned_ = in.U64();
  base.sweeps_ = in.U64();
  base.replacements_ = in.U64();
  const std::uint8_t sweeping = in.U8();
  if (!in.ok() || sweeping > 1 || base.cache_taken_at_ > base.learned_) {
    return std::nullopt;
  }
  if (sweeping == 0) return base;
  const std::uint8_t replacing = in.U8();
  if (!in.ok() || replacing > 1) return std::nullopt;
  std::optional<Fit> incoming;
  if (replacing == 1) {
    incoming = Fit::Load(in, dim, num_targets, format.ridge);
    if (!incoming.has_value()) return std::nullopt;
  }
  RandomFeaturePredictor weights =
      incoming ? incoming->ridge.predictor() : base.active_.ridge.predictor();
  Sweep sweep{std::move(incoming),
              std::move(weights),
              ChunkedRows<double>(num_targets),
              0,
              0,
              0};
  if (!LoadWeights(in, format, &sweep.weights) ||
      !LoadRows(in, &sweep.residuals)) {
    return std::nullopt;
  }
  sweep.next = in.U64();
  sweep.end = in.U64();
  sweep.taken_at = in.U64();
  if (!in.ok() || sweep.next > sweep.end || sweep.taken_at > base.learned_ ||
      sweep.end > sweep.residuals.size()) {
    return std::nullopt;
  }
  base.sweep_.emplace(std::move(sweep));
  return base;
}

}  // namespace streamreg
