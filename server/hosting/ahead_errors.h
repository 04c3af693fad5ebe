#ifndef STREAMREG_SERVER_HOSTING_AHEAD_ERRORS_H_
#define STREAMREG_SERVER_HOSTING_AHEAD_ERRORS_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "core/base/mutex.h"
#include "core/model/model_config.h"
#include "core/model/prediction.h"
#include "core/model/sample.h"
#include "server/hosting/answer_errors.h"

namespace streamreg {

// The predictions a model sent ahead of their ticks (LearnRequest.ahead,
// each query naming the sample id its tick's sample will carry), scored
// once those samples come: the figures a loop that uses its predictions
// ahead measures (ModelStats.ahead_*), and the calibration of their
// intervals. A prediction made 10 ticks ahead errs more than one made at
// its tick, so the Learn answers' intervals would be too narrow for it;
// until enough predictions ahead are scored for the level, one keeps the
// interval it was given. Keeps at most kWaiting predictions waiting for
// their sample (the oldest dropped, never scored). Thread-safe.
class AheadErrors {
 public:
  static constexpr std::size_t kWaiting = 65536;

  explicit AheadErrors(const ModelConfig& config) : errors_(config) {}
  AheadErrors(std::size_t num_targets, AnswerErrors::Options options)
      : errors_(num_targets, options) {}

  // A prediction about to be sent ahead for sample `sample_id` (not 0):
  // its interval set from the predictions ahead scored so far, and a copy
  // kept until that sample comes (a second prediction for the same id
  // replaces the first).
  void Sent(std::uint64_t sample_id, Prediction* prediction)
      ABSL_LOCKS_EXCLUDED(mutex_);
  // A sample came in a Learn message: the prediction sent ahead for it,
  // if one waits, is scored against its targets.
  void Arrived(const Sample& sample) ABSL_LOCKS_EXCLUDED(mutex_);

  AnswerErrors::Figures figures() const { return errors_.figures(); }

 private:
  AnswerErrors errors_;
  // Whether a prediction was ever sent ahead (read without the lock: the
  // samples of a model whose streams never predict ahead pay none).
  std::atomic<bool> any_waiting_{false};
  Mutex mutex_;
  absl::flat_hash_map<std::uint64_t, Prediction> waiting_
      ABSL_GUARDED_BY(mutex_);
  std::deque<std::uint64_t> sent_order_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_HOSTING_AHEAD_ERRORS_H_
