#ifndef STREAMREG_SERVER_HOSTING_LEARNING_CURVE_H_
#define STREAMREG_SERVER_HOSTING_LEARNING_CURVE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "core/base/mutex.h"
#include "core/model/model.h"

namespace streamreg {

// A hosted model's learning curves since the server started hosting it:
// the prequential and honest nMSE of each target against the samples
// learned, and its intervals' coverage counts (so that the coverage
// between any two points is known), for the status page. Points are kept at an
// even spacing in samples in bounded memory: one every `step()` samples, and
// once kCapacity points are held every other one is dropped and the step
// doubles, so the whole history is always there at about kCapacity / 2 to
// kCapacity points. The learning thread learns a batch in pieces that end
// where a point is due (LearnStage), so a curve is as fine with large
// Ingest batches as with a robot's single samples, and reads the model's
// stats only then (a few hundred times per doubling of the samples).
// Readers take a copy.
// Not persisted: after a restart the curve starts at the restored count,
// at the step it would have reached by then.
class LearningCurve {
 public:
  static constexpr std::size_t kCapacity = 256;
  static constexpr std::uint64_t kFirstStep = 16;

  struct Point {
    std::uint64_t samples = 0;
    std::vector<double> prequential_nmse;  // per target; NaN until known
    std::vector<double> honest_nmse;
    // ModelStats' interval_scored and interval_covered then.
    std::vector<std::uint64_t> interval_scored;
    std::vector<std::uint64_t> interval_covered;
  };

  // The sample count at which the next point is due.
  std::uint64_t next_due() const {
    return next_due_.load(std::memory_order_relaxed);
  }
  // Whether a point is due once `learned` samples are learned.
  bool Due(std::uint64_t learned) const { return learned >= next_due(); }
  // Records the point at `learned` samples (call when Due).
  void Record(std::uint64_t learned, const ModelStats& stats)
      ABSL_LOCKS_EXCLUDED(mutex_);

  std::vector<Point> Points() const ABSL_LOCKS_EXCLUDED(mutex_);
  std::uint64_t step() const ABSL_LOCKS_EXCLUDED(mutex_);

 private:
  mutable Mutex mutex_;
  std::vector<Point> points_ ABSL_GUARDED_BY(mutex_);
  std::uint64_t step_ ABSL_GUARDED_BY(mutex_) = kFirstStep;
  std::atomic<std::uint64_t> next_due_{1};
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_HOSTING_LEARNING_CURVE_H_
