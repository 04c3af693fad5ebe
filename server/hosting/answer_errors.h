#ifndef STREAMREG_SERVER_HOSTING_ANSWER_ERRORS_H_
#define STREAMREG_SERVER_HOSTING_ANSWER_ERRORS_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "common/normalized_error.h"
#include "core/base/mutex.h"
#include "core/model/model_config.h"
#include "core/model/prediction.h"
#include "core/regression/adaptive_conformal.h"
#include "core/regression/prequential_selector.h"

namespace streamreg {

// The errors of the Learn answers this server sent for one model, as sent:
// each answer's prediction against its own sample's y (the Learn message
// carries it, so the error is known when the answer goes out), whatever
// the model's lag when it answered. The model's prequential error scores a
// sample when the learner reaches it, with the model up to date; an answer
// made while learning lagged (a take-over wait, a flood) was worse, and
// this is what the client got (docs/estimators.md, "Intervals").
//
// It also calibrates the answers' intervals on those errors: adaptive
// conformal inference (AdaptiveConformal) on the scores |y - answer| / s,
// s each target's forgotten RMS answer error before the answer (1 while
// 0), so that over any T consecutive answers the fraction outside the
// interval they carried is within (1 + 2 step) / (step T) of 1 - level.
// Until enough answers are scored for the level, an answer keeps the
// interval the model gave it (calibrated on the prequential errors).
//
// Counted since this server hosted the model (a restart or a move to
// another replica starts again). Thread-safe: the answers of several
// streams are scored on their gRPC threads.
class AnswerErrors {
 public:
  struct Options {
    AdaptiveConformal::Options intervals;
    // The forgetting of the recent figures and of the scale s, as the
    // model's prequential error (ModelConfig::selection_forgetting).
    double forgetting = 0.999;
  };
  AnswerErrors(std::size_t num_targets, Options options);
  // A model's: its interval settings, and its prequential error's
  // forgetting.
  explicit AnswerErrors(const ModelConfig& config);

  // A Learn answer about to be sent for a sample whose targets are
  // `truth`: sets its interval at the model's level from the answers
  // scored before it (when they are enough for the level; otherwise it
  // keeps its own), then scores it. `answer` has a value per target.
  void Answer(Prediction* answer, std::span<const double> truth);
  // An answer whose truth is not known yet (a prediction asked ahead of
  // its tick): its interval set as Answer would set it, where the answers
  // scored are enough for the level (elsewhere it keeps its own); nothing
  // scored.
  void Calibrate(Prediction* answer) const;
  // An answer sent earlier with its interval, scored now that its truth
  // is known.
  void Score(const Prediction& sent, std::span<const double> truth);

  // What ModelStats reports of the answers (every vector per target).
  struct Figures {
    std::uint64_t answers = 0;
    // Over every answer scored (each weighed alike: the squared errors'
    // mean over the variance of the answered samples' y, as a client
    // counts them, common/normalized_error.h); NaN before the first.
    std::vector<double> nmse;
    std::vector<double> mse;
    // The same forgotten (weight `forgetting` a sample): the figure the
    // model's prequential_nmse is beside. NaN until known.
    std::vector<double> recent_nmse;
    // The half width the next answer gets at the model's level (+inf
    // while too few answers are scored: the answer then keeps the model's
    // own), and the fraction of the answers scored that fell within the
    // interval they were sent with (NaN before the first).
    std::vector<double> interval_half_width;
    std::vector<double> interval_coverage;

    // Into a report of the answers' intervals (ModelStats'
    // answer_interval_*, the model's own calibration's): the coverage of
    // those sent, and the half width the next gets where the answers'
    // calibration has it (elsewhere the answer keeps the model's).
    void CopyIntervalsTo(std::vector<double>* half_width,
                         std::vector<double>* coverage) const;
  };
  Figures figures() const;

 private:
  double Scale(std::size_t t) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Scores `sent` (its interval as it was sent) against `truth`.
  void ScoreLocked(const Prediction& sent, std::span<const double> truth)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Sets target t's interval of `answer` (sized for every target) from
  // the answers scored so far, where they are enough for the level.
  void SetInterval(Prediction* answer, std::size_t t) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);

  const std::size_t num_targets_;
  mutable Mutex mutex_;
  NormalizedError all_ ABSL_GUARDED_BY(mutex_);
  PrequentialScore recent_ ABSL_GUARDED_BY(mutex_);
  AdaptiveConformal intervals_ ABSL_GUARDED_BY(mutex_);
  std::vector<std::uint64_t> within_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_HOSTING_ANSWER_ERRORS_H_
