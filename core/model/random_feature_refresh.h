#ifndef STREAMREG_CORE_MODEL_RANDOM_FEATURE_REFRESH_H_
#define STREAMREG_CORE_MODEL_RANDOM_FEATURE_REFRESH_H_

#include <cstddef>
#include <deque>
#include <optional>
#include <span>
#include <stop_token>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "core/base/mutex.h"
#include "core/metric/metric_transform.h"
#include "core/metric/slot_rows.h"
#include "core/regression/random_feature_ridge.h"

namespace streamreg {

// A random-feature ridge (RandomFeatureRidge) learned afresh in the
// background in the coordinates of a new transform — a model's
// random-feature base after its metric changed (docs/estimators.md,
// "Random-feature ridge"). It first learns the samples the model stored
// when it started, in slot order, then every sample the model learns after
// that, which the learner hands it in order (Feed) while the job catches
// up. Taken over at a fixed sample count — Finish waits until it has
// learned every sample fed — it holds exactly those samples in that order,
// bit for bit, whatever the timing, so the model's results never depend
// on it. A snapshot captures it mid-way (Capture) and recovery goes on from
// there (Resume).
//
// Start, Feed, Capture and Finish are the learner's (one thread); the work
// runs on a thread of its own.
class RandomFeatureRefresh {
 public:
  struct Job {
    MetricTransform transform;  // raw x -> the ridge's coordinates
    std::size_t num_targets = 0;
    RandomFeatureRidge::Options options;
    std::size_t num_slots = 0;  // stored samples [0, num_slots) first
  };
  // The ridge and the transform it learns in.
  struct Built {
    MetricTransform transform;
    RandomFeatureRidge ridge;
  };

  RandomFeatureRefresh() = default;
  // Abandons the work (stops, then joins).
  ~RandomFeatureRefresh();
  RandomFeatureRefresh(const RandomFeatureRefresh&) = delete;
  RandomFeatureRefresh& operator=(const RandomFeatureRefresh&) = delete;

  // Starts the job (none may be running): reads the stored samples through
  // `rows`, chunk by chunk, on the job's thread.
  void Start(Job job, CopySlotRows rows);
  // Running again from a capture: learns what is fed from then on.
  void Resume(Built captured);
  bool running() const { return running_; }

  // A sample the model learned after the job started, in order (raw x).
  void Feed(std::span<const double> x, std::span<const double> y);
  // Every sample so far learned (waiting for the job): a copy, for a
  // snapshot; the job goes on.
  Built Capture() const;
  // The same, taken: the job ends.
  Built Finish();

 private:
  // The job's thread: the stored samples, then what is fed.
  void Run(std::stop_token stop, std::size_t num_slots, CopySlotRows rows);
  // Waits until the job has learned everything given it.
  void WaitUntilIdle() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  void StopWorker();

  bool running_ = false;
  mutable Mutex mutex_;
  mutable CondVar changed_;
  // The ridge, learned by the job's thread outside the lock while `busy_`;
  // read by Capture and Finish only once it is idle.
  std::optional<Built> built_;
  // Samples fed and not yet taken by the job: x then y, each row.
  std::deque<std::vector<double>> pending_ ABSL_GUARDED_BY(mutex_);
  bool busy_ ABSL_GUARDED_BY(mutex_) = false;
  bool stored_done_ ABSL_GUARDED_BY(mutex_) = true;
  std::jthread worker_;  // last: stopped and joined first
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_MODEL_RANDOM_FEATURE_REFRESH_H_
