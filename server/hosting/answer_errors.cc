#include "server/hosting/answer_errors.h"

#include <cmath>
#include <limits>

namespace streamreg {

AnswerErrors::AnswerErrors(std::size_t num_targets, Options options)
    : num_targets_(num_targets),
      all_(num_targets),
      recent_(num_targets, options.forgetting),
      intervals_(num_targets, options.intervals),
      within_(num_targets, 0) {}

AnswerErrors::AnswerErrors(const ModelConfig& config)
    : AnswerErrors(config.num_targets(),
                   {.intervals = {.level = config.interval_level,
                                  .window = config.interval_window,
                                  .step = config.interval_step},
                    .forgetting = config.selection_forgetting}) {}

double AnswerErrors::Scale(std::size_t t) const {
  const double rms = std::sqrt(recent_.MeanSquaredError(t));
  return rms > 0.0 ? rms : 1.0;
}

void AnswerErrors::SetInterval(Prediction* answer, std::size_t t) const {
  const double multiplier = intervals_.Multiplier(t);
  if (!std::isfinite(multiplier)) return;  // it keeps the model's
  const double half = multiplier * Scale(t);
  answer->lower[t] = answer->value[t] - half;
  answer->upper[t] = answer->value[t] + half;
}

void AnswerErrors::Answer(Prediction* answer, std::span<const double> truth) {
  const std::size_t m = num_targets_;
  answer->lower.resize(m, -std::numeric_limits<double>::infinity());
  answer->upper.resize(m, std::numeric_limits<double>::infinity());
  MutexLock lock(&mutex_);
  for (std::size_t t = 0; t < m; ++t) SetInterval(answer, t);
  ScoreLocked(*answer, truth);
}

void AnswerErrors::Score(const Prediction& sent,
                         std::span<const double> truth) {
  MutexLock lock(&mutex_);
  ScoreLocked(sent, truth);
}

void AnswerErrors::ScoreLocked(const Prediction& sent,
                               std::span<const double> truth) {
  for (std::size_t t = 0; t < num_targets_; ++t) {
    if (t < sent.lower.size() && sent.lower[t] <= truth[t] &&
        truth[t] <= sent.upper[t]) {
      ++within_[t];
    }
    intervals_.Add(t, std::abs(truth[t] - sent.value[t]) / Scale(t));
  }
  all_.Add(sent.value, truth);
  recent_.Add(sent.value, truth);
}

void AnswerErrors::Calibrate(Prediction* answer) const {
  const std::size_t m = num_targets_;
  answer->lower.resize(m, -std::numeric_limits<double>::infinity());
  answer->upper.resize(m, std::numeric_limits<double>::infinity());
  MutexLock lock(&mutex_);
  for (std::size_t t = 0; t < m; ++t) SetInterval(answer, t);
}

AnswerErrors::Figures AnswerErrors::figures() const {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  MutexLock lock(&mutex_);
  Figures figures;
  figures.answers = all_.count();
  const auto answers = static_cast<double>(figures.answers);
  for (std::size_t t = 0; t < num_targets_; ++t) {
    figures.nmse.push_back(answers > 0 ? all_.Nmse(t) : kNaN);
    figures.mse.push_back(answers > 0 ? all_.MeanSquaredError(t) : kNaN);
    figures.recent_nmse.push_back(recent_.Nmse(t));
    figures.interval_half_width.push_back(intervals_.Multiplier(t) * Scale(t));
    figures.interval_coverage.push_back(
        answers > 0 ? static_cast<double>(within_[t]) / answers : kNaN);
  }
  return figures;
}

void AnswerErrors::Figures::CopyIntervalsTo(
    std::vector<double>* half_width, std::vector<double>* coverage) const {
  half_width->resize(interval_half_width.size(),
                     std::numeric_limits<double>::infinity());
  for (std::size_t t = 0; t < interval_half_width.size(); ++t) {
    if (std::isfinite(interval_half_width[t])) {
      (*half_width)[t] = interval_half_width[t];
    }
  }
  *coverage = interval_coverage;
}

}  // namespace streamreg
