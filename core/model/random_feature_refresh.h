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
#include "core/model/random_feature_fit.h"
#include "core/regression/random_feature_ridge.h"

namespace streamreg {

// A random-feature ridge (RandomFeatureRidge) learned afresh in the
// background in the coordinates of a new transform — a model's
// random-feature base after its coordinates changed (docs/estimators.md,
// "Random-feature ridge"). Over the samples the model stored when it
// started, it chooses the lengthscale and the ridge among the job's
// candidates — each fitted in one batch (RandomFeatureRidge::FromSums),
// with the first kMaxChoiceFrequencies of the map, to the first 80% of the
// newest kMaxChoiceSamples stored samples in slot order and scored on the
// rest — and solves the chosen ridge, with every frequency, over every
// stored sample; then it learns every sample the model learns after that, which
// the learner hands it in order (Feed) while the job catches up. Taken over at
// a fixed sample count — Finish waits until it has learned every sample fed —
// it holds exactly those samples whatever the timing, so the model's results
// never depend on it. A snapshot captures it mid-way (Capture) and recovery
// goes on from there (Resume).
//
// Start, Feed, Capture and Finish are the learner's (one thread); the work
// runs on a thread of its own.
class RandomFeatureRefresh {
 public:
  struct Job {
    MetricTransform transform;  // raw x -> the ridge's coordinates
    std::size_t num_targets = 0;
    // Everything but the lengthscale and the ridge, which are chosen among
    // these candidates (none: the options' own).
    RandomFeatureRidge::Options options;
    std::vector<double> lengthscales = {};
    std::vector<double> ridges = {};
    std::size_t num_slots = 0;  // stored samples [0, num_slots) first
  };
  // The fewest stored samples a choice is made over (fewer: the options'
  // own lengthscale and ridge).
  static constexpr std::size_t kMinChoiceSamples = 50;
  // The most stored samples a choice is made over: the newest in slot
  // order. Each candidate's sums cost F^2 / 2 a sample, so that without a
  // bound a rebuild over n samples cost 4.2 n F^2 / 2 for the four
  // candidate lengthscales, and at D = 256 a 1 kHz arm's rebuilds alone
  // took two thirds of the server's CPU (bench/notes/
  // issue-75-full-size-base.md).
  static constexpr std::size_t kMaxChoiceSamples = 4096;
  // The most frequencies the candidates are fitted with: the first
  // kMaxChoiceFrequencies of the map (the same kernel, its approximation
  // coarser), so that a choice costs the same at D = 256 as at D = 64 —
  // at D = 256 its 16 candidates' factorizations alone were 17 times
  // those of a choice at D = 64 (F^3 / 6 each).
  static constexpr std::size_t kMaxChoiceFrequencies = 64;
  // The frequencies `job`'s candidates are fitted with.
  static std::size_t ChoiceFrequencies(const Job& job);
  // The candidates' held-out error, each target's squared error divided by
  // its variance over the held-out samples, summed over the targets; the
  // least wins (ties: the first).
  struct Choice {
    double lengthscale = 0.0;
    double ridge = 0.0;
    double error = 0.0;
  };
  // The multiply-adds BuildOver does for `job`: each candidate
  // lengthscale's sums over the samples it is fitted to and the chosen
  // one's over every stored sample (F^2 / 2 a sample, F = 1 + d + 2D with
  // the candidates' D or the job's), and a Cholesky factorization (F^3 / 6)
  // per candidate and for the chosen ridge — what a model budgets its
  // rebuilds by. (Not counted: the samples the job learns while it catches
  // up, F^2 / 2 each, as the learner's own ridge does.)
  static double MultiplyAdds(const Job& job);
  // Of those, what each stored sample adds to the chosen fit's sums: F^2 /
  // 2 with the job's frequencies (what the learner's own ridge costs a
  // sample).
  static double SampleMultiplyAdds(const Job& job);
  // The choice and the ridge over stored samples (rows of z, y), on the
  // calling thread.
  static RandomFeatureRidge BuildOver(const Job& job,
                                      const std::vector<double>& z,
                                      const std::vector<double>& y,
                                      Choice* choice = nullptr);
  // The ridge and the transform it learns in.
  using Built = RandomFeatureFit;

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
  // Whether the job has learned everything given it (Finish would not
  // wait); callable from any thread.
  bool Idle() const ABSL_LOCKS_EXCLUDED(mutex_);

  // A sample the model learned after the job started, in order (raw x).
  void Feed(std::span<const double> x, std::span<const double> y);
  // Every sample so far learned (waiting for the job): a copy, for a
  // snapshot; the job goes on.
  Built Capture() const;
  // The same, taken: the job ends.
  Built Finish();

 private:
  // The job's thread: the stored samples (none for a resumed job), then
  // what is fed.
  void Run(std::stop_token stop, std::optional<Job> job, CopySlotRows rows);
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
