#ifndef STREAMREG_SERVER_HOSTING_RECENT_PREDICTIONS_H_
#define STREAMREG_SERVER_HOSTING_RECENT_PREDICTIONS_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "core/base/mutex.h"
#include "core/model/prediction.h"
#include "core/model/sample.h"

namespace streamreg {

// The last kCapacity samples a hosted model learned and scored, each beside
// the prediction the model made for it just before learning it (its value
// and interval at the model's level; a large store scores one sample in
// ModelConfig::ScoringStride, and makes none for the others): the status
// page's band on a target's
// recent predictions, with the truth that fell in or out of it. Written by
// the learning thread in a fixed ring (no allocation once full beyond the
// predictions handed over); readers take a copy, oldest first. Not
// persisted: empty after a restart until samples arrive.
class RecentPredictions {
 public:
  static constexpr std::size_t kCapacity = 200;

  struct Entry {
    std::uint64_t sample = 0;  // its position in the stream, from 1
    std::vector<double> truth;
    std::vector<double> value;
    std::vector<double> lower;
    std::vector<double> upper;
  };

  // Records samples first, first + 1, ... with the predictions made for
  // them (as many as samples; moved from; an empty one, of a sample not
  // scored, is passed over).
  void Record(std::uint64_t first, std::span<const Sample> samples,
              std::span<Prediction> predictions) ABSL_LOCKS_EXCLUDED(mutex_);

  std::vector<Entry> Entries() const ABSL_LOCKS_EXCLUDED(mutex_);

 private:
  mutable Mutex mutex_;
  std::vector<Entry> ring_ ABSL_GUARDED_BY(mutex_);
  std::size_t oldest_ ABSL_GUARDED_BY(mutex_) = 0;  // once full
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_HOSTING_RECENT_PREDICTIONS_H_
