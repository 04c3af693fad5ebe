#include "core/model/interval_recalibration.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <utility>

namespace streamreg {
namespace {

// A NaN score (no prediction) counts as outside, as AdaptiveConformal::Add
// counts it.
double Outside(double score) {
  return std::isnan(score) ? std::numeric_limits<double>::infinity() : score;
}

}  // namespace

IntervalRecalibration::IntervalRecalibration(std::size_t num_targets,
                                             AdaptiveConformal::Options options,
                                             std::size_t rate)
    : num_targets_(num_targets),
      window_(std::max<std::size_t>(options.window, 1)),
      rate_(rate),
      intervals_(num_targets, options),
      scores_(num_targets) {}

IntervalRecalibration::Positions IntervalRecalibration::DueBefore(
    std::uint64_t seen) const {
  if (!running_ || seen < started_) return {};
  // Evenly over the duration: by sample started_ + e, ceil(e * count /
  // duration) of them.
  const std::uint64_t elapsed = std::min(seen + 1 - started_, duration_);
  const std::uint64_t due = (elapsed * count_ + duration_ - 1) / duration_;
  return {done_, std::max<std::size_t>(done_, static_cast<std::size_t>(due))};
}

void IntervalRecalibration::Record(std::size_t position,
                                   std::span<const double> scores,
                                   std::span<const double> band_scores,
                                   std::span<const double> spread_scores) {
  for (std::size_t t = 0; t < num_targets_; ++t) {
    scores_[t][position] = Outside(scores[t]);
    if (band_scores.empty()) continue;
    // A target without a finite score on either counts on neither.
    const double band = band_scores[t];
    const double spread = spread_scores[t];
    if (!std::isfinite(band) || !std::isfinite(spread)) continue;
    band_squares_ += band * band;
    spread_squares_ += spread * spread;
  }
  done_ = position + 1;
}

double IntervalRecalibration::RecentShareOfNearest(
    std::span<const Neighbor> found, std::size_t stored, std::size_t lag) {
  if (found.empty() || lag == 0 || lag >= stored) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  double nearest = std::numeric_limits<double>::infinity();
  for (const Neighbor& neighbor : found) {
    nearest = std::min(nearest, neighbor.distance);
  }
  std::size_t tied = 0;
  std::size_t recent = 0;
  for (const Neighbor& neighbor : found) {
    if (neighbor.distance != nearest) continue;
    ++tied;
    if (neighbor.id >= stored - lag) ++recent;
  }
  return static_cast<double>(recent) / static_cast<double>(tied);
}

void IntervalRecalibration::NoteNearest(double recent_share, double chance) {
  if (std::isnan(recent_share) || !(chance > 0.0 && chance < 1.0)) return;
  nearest_recent_ += recent_share;
  nearest_chance_ += chance;
  nearest_variance_ += chance * (1.0 - chance);
}

bool IntervalRecalibration::NearestSaysASeries() const {
  return nearest_variance_ >= kNearestMinVariance &&
         nearest_recent_ - nearest_chance_ >=
             kNearestZ * std::sqrt(nearest_variance_);
}

void IntervalRecalibration::AfterSample(std::uint64_t seen, std::size_t stored,
                                        std::uint64_t lag,
                                        bool errors_say_series) {
  series_at_a_glance_ = errors_say_series || NearestSaysASeries();
  if (series_at_a_glance_) {
    running_ = false;
    exchangeable_ = false;
    return;
  }
  if (running_ && done_ == count_) Finish();
  if (!running_ && collecting() && stored >= kFirstPassAt && lag > 0) {
    Start(seen, stored, lag);
  }
}

bool IntervalRecalibration::LooksLikeASeries(
    std::span<const double> honest_nmse,
    std::span<const double> prequential_nmse) {
  double honest = 0.0;
  double prequential = 0.0;
  for (std::size_t t = 0; t < honest_nmse.size(); ++t) {
    if (std::isnan(honest_nmse[t]) || std::isnan(prequential_nmse[t])) {
      continue;
    }
    honest += honest_nmse[t];
    prequential += prequential_nmse[t];
  }
  return honest > 0.0 && honest >= kGlanceRatio * prequential;
}

void IntervalRecalibration::Start(std::uint64_t seen, std::size_t stored,
                                  std::uint64_t lag) {
  running_ = true;
  count_ = std::min(window_, stored);
  first_slot_ = stored - count_;
  started_ = seen;
  // rate_ a sample up to kFullRateBelow stored, rate_ * kFullRateBelow /
  // stored after: ceil(stored * max(stored, kFullRateBelow) /
  // (rate_ * kFullRateBelow)) samples for min(window_, stored).
  const std::uint64_t per = std::uint64_t{rate_} * kFullRateBelow;
  const std::uint64_t work =
      std::uint64_t{stored} * std::max<std::uint64_t>(stored, kFullRateBelow);
  duration_ = std::max<std::uint64_t>(1, (work + per - 1) / per);
  done_ = 0;
  band_lag_ = lag;
  scored_at_start_ = num_targets_ > 0 ? intervals_.scored(0) : 0;
  for (std::vector<double>& scores : scores_) scores.assign(count_, 0.0);
  band_squares_ = 0.0;
  spread_squares_ = 0.0;
}

void IntervalRecalibration::Finish() {
  running_ = false;
  ++passes_;
  exchangeable_ = band_squares_ < kSeriesRatio * kSeriesRatio * spread_squares_;
  if (!exchangeable_) {
    if (count_ >= kSettledPass) settled_ = true;
    return;
  }
  ++replacements_;
  for (std::size_t t = 0; t < num_targets_; ++t) {
    const std::uint64_t streamed = intervals_.scored(t) - scored_at_start_;
    intervals_.ReplaceOlder(t, scores_[t], static_cast<std::size_t>(streamed));
  }
}

void IntervalRecalibration::Save(ByteWriter& out) const {
  intervals_.Save(out);
  out.U8(settled_ ? 1 : 0);
  out.U8(series_at_a_glance_ ? 1 : 0);
  out.U8(exchangeable_ ? 1 : 0);
  out.U64(passes_);
  out.U64(replacements_);
  out.Double(nearest_recent_);
  out.Double(nearest_chance_);
  out.Double(nearest_variance_);
  out.U8(running_ ? 1 : 0);
  if (!running_) return;
  out.U64(first_slot_);
  out.U64(count_);
  out.U64(started_);
  out.U64(duration_);
  out.U64(done_);
  out.U64(band_lag_);
  out.U64(scored_at_start_);
  for (const std::vector<double>& scores : scores_) {
    out.Doubles(std::span(scores).first(done_));
  }
  out.Double(band_squares_);
  out.Double(spread_squares_);
}

bool IntervalRecalibration::Load(ByteReader& in, bool with_ages) {
  std::optional<AdaptiveConformal> intervals =
      AdaptiveConformal::Load(in, num_targets_);
  const AdaptiveConformal::Options& ours = intervals_.options();
  if (!intervals.has_value() || intervals->options().level != ours.level ||
      intervals->options().window != ours.window ||
      intervals->options().step != ours.step) {
    return false;
  }
  intervals_ = *std::move(intervals);
  settled_ = in.U8() == 1;
  series_at_a_glance_ = in.U8() == 1;
  exchangeable_ = in.U8() == 1;
  passes_ = in.U64();
  replacements_ = in.U64();
  nearest_recent_ = with_ages ? in.Double() : 0.0;
  nearest_chance_ = with_ages ? in.Double() : 0.0;
  nearest_variance_ = with_ages ? in.Double() : 0.0;
  if (!(nearest_recent_ >= 0.0 && nearest_chance_ >= 0.0 &&
        nearest_variance_ >= 0.0)) {
    return false;
  }
  running_ = in.U8() == 1;
  if (!running_) return in.ok() && replacements_ <= passes_;
  first_slot_ = in.U64();
  count_ = in.U64();
  started_ = in.U64();
  duration_ = in.U64();
  done_ = in.U64();
  band_lag_ = in.U64();
  scored_at_start_ = in.U64();
  if (!in.ok() || count_ == 0 || count_ > window_ || done_ > count_ ||
      duration_ == 0) {
    return false;
  }
  for (std::vector<double>& scores : scores_) {
    scores = in.Doubles();
    if (scores.size() != done_ ||
        std::any_of(scores.begin(), scores.end(),
                    [](double s) { return !(s >= 0.0); })) {
      return false;
    }
    scores.resize(count_, 0.0);
  }
  band_squares_ = in.Double();
  spread_squares_ = in.Double();
  return in.ok() && band_squares_ >= 0.0 && spread_squares_ >= 0.0;
}

}  // namespace streamreg
