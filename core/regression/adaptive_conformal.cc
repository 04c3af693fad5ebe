#include "core/regression/adaptive_conformal.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace streamreg {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

bool ValidOptions(const AdaptiveConformal::Options& options) {
  return options.level > 0.0 && options.level < 1.0 && options.window >= 1 &&
         options.step >= 0.0 && std::isfinite(options.step);
}

}  // namespace

AdaptiveConformal::AdaptiveConformal(std::size_t num_targets, Options options)
    : options_(options), targets_(num_targets) {
  for (Target& target : targets_) target.alpha = 1.0 - options_.level;
}

double AdaptiveConformal::MultiplierAt(const Target& target,
                                       double miscoverage) {
  if (!(miscoverage < 1.0)) return 0.0;
  if (!(miscoverage > 0.0)) return kInfinity;
  const std::size_t n = target.sorted.size();
  // ceil((n + 1)(1 - a)), the rounding of an exact integer product kept.
  const double position = static_cast<double>(n + 1) * (1.0 - miscoverage);
  const double rank = std::max(1.0, std::ceil(position - 1e-9));
  if (rank > static_cast<double>(n)) return kInfinity;
  return target.sorted[static_cast<std::size_t>(rank) - 1];
}

double AdaptiveConformal::Multiplier(std::size_t t,
                                     std::optional<double> level) const {
  const Target& target = targets_[t];
  const double alpha = 1.0 - options_.level;
  const double miscoverage =
      level.has_value() ? (1.0 - *level) * target.alpha / alpha : target.alpha;
  return MultiplierAt(target, miscoverage);
}

bool AdaptiveConformal::Add(std::size_t t, double score) {
  if (std::isnan(score)) score = kInfinity;
  Target& target = targets_[t];
  const bool within = score <= MultiplierAt(target, target.alpha);
  target.alpha +=
      options_.step * ((1.0 - options_.level) - (within ? 0.0 : 1.0));
  ++target.scored;
  target.covered += within ? 1 : 0;
  std::vector<double>& sorted = target.sorted;
  if (target.ring.size() < options_.window) {
    target.ring.push_back(score);
    sorted.insert(std::upper_bound(sorted.begin(), sorted.end(), score), score);
    return within;
  }
  // Full: the new score takes the oldest's place, and only the scores
  // between their two positions move (one shift instead of an erase's and
  // an insertion's, each of half the window on average).
  double& oldest = target.ring[target.oldest];
  const auto removed = std::lower_bound(sorted.begin(), sorted.end(), oldest);
  const auto at = std::upper_bound(sorted.begin(), sorted.end(), score);
  if (at <= removed) {
    std::move_backward(at, removed, removed + 1);
    *at = score;
  } else {
    std::move(removed + 1, at, removed);
    *(at - 1) = score;
  }
  oldest = score;
  target.oldest = (target.oldest + 1) % options_.window;
  return within;
}

void AdaptiveConformal::ReplaceOlder(std::size_t t,
                                     std::span<const double> older,
                                     std::size_t newest_kept) {
  Target& target = targets_[t];
  const std::size_t kept = target.ring.size();
  newest_kept = std::min(newest_kept, kept);
  std::vector<double> ring(older.begin(), older.end());
  for (double& score : ring) {
    if (std::isnan(score)) score = kInfinity;
  }
  // The newest_kept newest in arrival order: the ring from its oldest on.
  for (std::size_t i = kept - newest_kept; i < kept; ++i) {
    ring.push_back(target.ring[(target.oldest + i) % kept]);
  }
  if (ring.size() > options_.window) {
    ring.erase(ring.begin(), ring.end() - options_.window);
  }
  target.sorted = ring;
  std::sort(target.sorted.begin(), target.sorted.end());
  target.ring = std::move(ring);
  target.oldest = 0;
  target.alpha = 1.0 - options_.level;
}

void AdaptiveConformal::Save(ByteWriter& out) const {
  out.Double(options_.level);
  out.U64(options_.window);
  out.Double(options_.step);
  out.U64(targets_.size());
  for (const Target& target : targets_) {
    // Oldest first: the ring as it would be filled afresh.
    std::vector<double> in_order(target.ring.begin() + target.oldest,
                                 target.ring.end());
    in_order.insert(in_order.end(), target.ring.begin(),
                    target.ring.begin() + target.oldest);
    out.Doubles(in_order);
    out.Double(target.alpha);
    out.U64(target.scored);
    out.U64(target.covered);
  }
}

std::optional<AdaptiveConformal> AdaptiveConformal::Load(
    ByteReader& in, std::size_t num_targets) {
  Options options;
  options.level = in.Double();
  options.window = in.U64();
  options.step = in.Double();
  if (!in.ok() || !ValidOptions(options) || in.U64() != num_targets) {
    return std::nullopt;
  }
  AdaptiveConformal out(num_targets, options);
  for (Target& target : out.targets_) {
    target.ring = in.Doubles();
    target.alpha = in.Double();
    target.scored = in.U64();
    target.covered = in.U64();
    if (!in.ok() || target.ring.size() > options.window ||
        target.covered > target.scored || !std::isfinite(target.alpha) ||
        std::any_of(target.ring.begin(), target.ring.end(),
                    [](double s) { return !(s >= 0.0); })) {
      return std::nullopt;
    }
    target.sorted = target.ring;
    std::sort(target.sorted.begin(), target.sorted.end());
  }
  return out;
}

}  // namespace streamreg
