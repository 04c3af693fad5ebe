#ifndef STREAMREG_CORE_MODEL_INTERVAL_RECALIBRATION_H_
#define STREAMREG_CORE_MODEL_INTERVAL_RECALIBRATION_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/base/byte_coding.h"
#include "core/index/neighbor.h"
#include "core/regression/adaptive_conformal.h"

namespace streamreg {

// The queries' interval calibration made again by the current model while
// the stream is young (docs/estimators.md, "Recalibrating a young model").
// A score the learner streams comes from the model of its moment, made
// without the calibration lag's recent samples; on a data set of a few
// hundred rows the model that answers later is much better, and intervals
// calibrated on those scores are too wide (the learning curve is in them).
// A pass rescores the last min(window, n) stored samples with the current
// model, each predicted without itself (leave-one-out: the residuals of
// the jackknife+, Barber, Candès, Ramdas & Tibshirani 2021), spread over
// the samples learned next: `rate` predictions a sample while n <=
// kFullRateBelow, rate * kFullRateBelow / n after (a pass takes an eighth
// of the stream at rate 8 while it is small, and longer where predictions
// cost more and the learning curve is flatter); the next pass starts when
// one ends. The passes are work on the learning thread (three searches a
// position in a pass under kBandAllBelow), which a series is spared by the
// glances below. The scores go to a calibration of its own (intervals()),
// beside the streamed one the learner keeps with the lag: while passes run, the
// learner also streams each sample's score made with nothing left out into it
// (a new sample, predicted by the model of all before it, is what a query is),
// and a pass that ends replaces its scores of the samples it rescored.
//
// That is right for samples that come in no order (exchangeable), and
// wrong for a series in time, where a sample's neighbours in time stand in
// for its neighbours in space and a query ahead of the stream has none. A
// pass tells the two apart on some of its samples (every kBandEvery-th;
// all in a pass under kBandAllBelow): each is also predicted without its
// band, the samples within the calibration lag L of it either side, and
// without as many spread over twice the width (every other slot within 2L:
// the same number left out, but its neighbours in time kept). Samples in
// no order miss both alike; a series misses its band more. When the band's
// scores' mean square over all targets is under kSeriesRatio² times the
// spread ones', the pass ends exchangeable, and queries are calibrated by
// this calibration until a pass says otherwise; one that ends a series
// returns them to the streamed one, which a wrong verdict therefore never
// spoils. A pass of kSettledPass samples or more that finds a series ends
// the recalibration, and so does rate 0.
//
// Two glances at the stream gate the passes, where either says it is a
// series. Then no pass runs and queries use the streamed calibration,
// until both say otherwise.
//  - Its nearest neighbours' ages. Among samples in no order, a new
//    sample's nearest stored neighbour is any of the n stored alike: one of
//    the last L (the band's lag) with chance L / n. In a series it is
//    mostly one of them (a robot's previous ticks). Summed over the scored
//    samples, the nearest ones that were recent (a share, among
//    neighbours tied for nearest) exceeding their chance by kNearestZ
//    standard deviations or more (once the variance has reached
//    kNearestMinVariance, about 21 samples at chance 1/4) says a series.
//    The simulated arm is told so within its first 50 samples, where its
//    errors take 700; of 200 simulated streams of 5,000 samples in no
//    order none is, and no result of data/'s shuffled sets changed.
//  - Its own errors: its honest errors, made without the recent samples,
//    kGlanceRatio or more times its prequential ones (nMSE summed over the
//    targets; a series' prequential predictions see the samples just
//    before). On data/'s shuffled sets the ratio is 0.98–1.07, on
//    SARCOS's rows in time 1.33, whose band the passes do not tell apart
//    reliably (1.1–1.3 times the spread slots' up to 1,000 rows).
//
// Bookkeeping only, and deterministic: every replica that learns the same
// samples makes the same passes; the learner predicts (ModelLearner).
class IntervalRecalibration {
 public:
  static constexpr std::size_t kFirstPassAt = 16;  // samples stored
  static constexpr double kSeriesRatio = 1.3;
  static constexpr std::size_t kSettledPass = 512;
  static constexpr std::size_t kBandEvery = 4;
  static constexpr std::size_t kBandAllBelow = 256;
  static constexpr std::size_t kFullRateBelow = 256;
  static constexpr double kGlanceRatio = 1.15;
  static constexpr double kNearestZ = 4.0;
  static constexpr double kNearestMinVariance = 4.0;

  // `rate` 0: no pass, ever. `options`: the queries' calibration's.
  IntervalRecalibration(std::size_t num_targets,
                        AdaptiveConformal::Options options, std::size_t rate);

  // Positions [first, end) of the running pass to rescore before sample
  // number seen + 1 is learned (empty without a pass).
  struct Positions {
    std::size_t first = 0;
    std::size_t end = 0;
  };
  Positions DueBefore(std::uint64_t seen) const;
  // The store slot of a pass's position, whether it is also predicted
  // without its band (and without the spread slots), and the band's half
  // width L (slots either side).
  std::uint64_t SlotAt(std::size_t position) const {
    return first_slot_ + position;
  }
  bool BandAt(std::size_t position) const {
    return count_ < kBandAllBelow || position % kBandEvery == 0;
  }
  std::uint64_t band_lag() const { return band_lag_; }

  // Position `position`'s rescoring (positions in order, as DueBefore gave
  // them): per target its score for the intervals without itself and,
  // where BandAt, its scores without the band and without the spread slots
  // (else both empty).
  void Record(std::size_t position, std::span<const double> scores,
              std::span<const double> band_scores,
              std::span<const double> spread_scores);
  // Whether the learner streams scores into intervals() (passes may come):
  // rate > 0, not settled, and the stream not a series at a glance after
  // the last sample.
  bool collecting() const { return !ended() && !series_at_a_glance_; }
  // Whether no pass can come again: rate 0, or settled.
  bool ended() const { return rate_ == 0 || settled_; }
  // Of a scored sample's neighbours among the `stored` samples before it
  // (`found`, in NeighborOrder), the share of those tied for nearest that
  // are among the last `lag` stored (slots stored - lag and on); NaN when
  // none was found or lag is not under stored.
  static double RecentShareOfNearest(std::span<const Neighbor> found,
                                     std::size_t stored, std::size_t lag);
  // Counts that share, whose chance among samples in no order is `chance`
  // (lag / stored), toward the nearest neighbours' ages (NaN: not counted).
  void NoteNearest(double recent_share, double chance);
  // Whether the nearest neighbours' ages so far say a series.
  bool NearestSaysASeries() const;
  // A sample's score for target t made with nothing left out, streamed.
  void AddStreamed(std::size_t t, double score) { intervals_.Add(t, score); }
  // After sample number `seen` was learned (and its streamed scores, if
  // scored, added), with `stored` samples stored and a calibration lag of
  // `lag` samples: ends a pass rescored in full (replacing the kept scores
  // if it finds the samples exchangeable), and starts the next if one is
  // due. When `errors_say_series` (LooksLikeASeries) or the nearest
  // neighbours' ages do (a series at a glance) instead, drops a running
  // pass, returns queries to the streamed calibration and stops collecting
  // until a sample without it (the scores collected before are then
  // replaced by the next pass that ends).
  void AfterSample(std::uint64_t seen, std::size_t stored, std::uint64_t lag,
                   bool errors_say_series);
  // Whether errors of these normalized mean squares (per target; NaN:
  // not known) say the stream is a series at a glance: the honest ones'
  // sum kGlanceRatio or more times the prequential ones'.
  static bool LooksLikeASeries(std::span<const double> honest_nmse,
                               std::span<const double> prequential_nmse);

  bool running() const { return running_; }
  bool settled() const { return settled_; }
  // Whether the last pass found the samples exchangeable: queries are then
  // calibrated by intervals().
  bool exchangeable() const { return exchangeable_; }
  const AdaptiveConformal& intervals() const { return intervals_; }
  // Passes ended, and of them those that replaced the kept scores.
  std::uint64_t passes() const { return passes_; }
  std::uint64_t replacements() const { return replacements_; }

  // The exact state, for snapshots; Load fails on a malformed one. Saved
  // before the nearest neighbours' ages were (`with_ages` false), it loads
  // them as none counted yet.
  void Save(ByteWriter& out) const;
  bool Load(ByteReader& in, bool with_ages = true);

 private:
  void Start(std::uint64_t seen, std::size_t stored, std::uint64_t lag);
  void Finish();

  std::size_t num_targets_;
  std::size_t window_;
  std::size_t rate_;
  AdaptiveConformal intervals_;
  bool settled_ = false;
  bool series_at_a_glance_ = false;
  bool exchangeable_ = false;
  std::uint64_t passes_ = 0;
  std::uint64_t replacements_ = 0;
  // The nearest neighbours' ages: the recent shares summed, their chances
  // summed, and the chances' variances summed.
  double nearest_recent_ = 0.0;
  double nearest_chance_ = 0.0;
  double nearest_variance_ = 0.0;
  // The running pass: slots [first_slot_, first_slot_ + count_), started
  // after sample number started_, rescored by started_ + duration_, done_
  // of them so far.
  bool running_ = false;
  std::uint64_t first_slot_ = 0;
  std::size_t count_ = 0;
  std::uint64_t started_ = 0;
  std::uint64_t duration_ = 1;
  std::size_t done_ = 0;
  std::uint64_t band_lag_ = 0;
  // intervals_' scored count when it started: what scores were streamed
  // since (they stay, after the pass's).
  std::uint64_t scored_at_start_ = 0;
  // Per target, the pass's scores by position; over all targets, the
  // squares of the scores without the band and without the spread slots.
  std::vector<std::vector<double>> scores_;
  double band_squares_ = 0.0;
  double spread_squares_ = 0.0;
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_MODEL_INTERVAL_RECALIBRATION_H_
