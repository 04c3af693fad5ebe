#include "core/index/recent_knn_answers.h"

#include <cmath>
#include <limits>

#include "core/index/euclidean_distance.h"

namespace streamreg {
namespace {

// A cap's relative margin over |q - p| + r_k(p), so that the rounding of
// the distances the search computes never puts one of p's k neighbours
// just beyond it.
constexpr double kRoundingMargin = 1e-12;

}  // namespace

RecentKnnAnswers::RecentKnnAnswers(const RecentKnnAnswers& other) {
  *this = other;
}

RecentKnnAnswers& RecentKnnAnswers::operator=(const RecentKnnAnswers& other) {
  if (this == &other) return *this;
  std::array<Answer, kAnswers> answers;
  std::uint64_t records = 0;
  {
    MutexLock lock(&other.mutex_);
    answers = other.answers_;
    records = other.records_;
  }
  MutexLock lock(&mutex_);
  answers_ = std::move(answers);
  records_ = records;
  return *this;
}

double RecentKnnAnswers::Cap(std::span<const double> query, std::size_t k,
                             std::uintptr_t source, double* kth) const {
  double cap = std::numeric_limits<double>::infinity();
  if (kth != nullptr) *kth = cap;
  if (k == 0) return cap;
  MutexLock lock(&mutex_);
  for (const Answer& answer : answers_) {
    if (answer.k < k || answer.source != source ||
        answer.query.size() != query.size()) {
      continue;
    }
    const double reach =
        EuclideanDistance(query.data(), answer.query.data(), query.size()) +
        answer.distance;
    if (reach * (1.0 + kRoundingMargin) < cap) {
      cap = reach * (1.0 + kRoundingMargin);
      if (kth != nullptr) *kth = answer.distance;
    }
  }
  return cap;
}

void RecentKnnAnswers::Record(std::span<const double> query, std::size_t k,
                              double distance, std::uintptr_t source) const {
  if (k == 0 || !std::isfinite(distance)) return;
  MutexLock lock(&mutex_);
  Answer* replaced = &answers_[0];
  double nearest = std::numeric_limits<double>::infinity();
  for (Answer& answer : answers_) {
    if (answer.k == k && answer.source == source &&
        answer.query.size() == query.size()) {
      const double apart =
          EuclideanDistance(query.data(), answer.query.data(), query.size());
      if (apart <= answer.distance && apart < nearest) {
        nearest = apart;
        replaced = &answer;
      }
    }
  }
  if (!(nearest < std::numeric_limits<double>::infinity())) {
    for (Answer& answer : answers_) {
      if (answer.kept_at < replaced->kept_at) replaced = &answer;
    }
  }
  replaced->source = source;
  replaced->k = k;
  replaced->distance = distance;
  replaced->query.assign(query.begin(), query.end());
  replaced->kept_at = ++records_;
}

}  // namespace streamreg
