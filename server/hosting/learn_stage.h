#ifndef STREAMREG_SERVER_HOSTING_LEARN_STAGE_H_
#define STREAMREG_SERVER_HOSTING_LEARN_STAGE_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/base/mutex.h"
#include "core/base/pause_statistics.h"
#include "core/model/model.h"
#include "core/model/sample.h"
#include "server/hosting/learn_rate.h"
#include "server/hosting/learning_curve.h"
#include "server/hosting/recent_predictions.h"
#include "server/hosting/serial_queue.h"
#include "server/hosting/worker_pool.h"

namespace streamreg {

// The second half of a hosted model's write path. The first half logs a
// batch (checked where it arrived: ValidatedSamples), and the caller
// answers with predictions from the model as it is; the samples are then
// handed here, and learned in order on a thread of
// the learning pool, off the response path. Everything queued is learned
// exactly as if it had been learned at once (the model sees the same
// samples in the same order), only later; the stage keeps count, so an
// answer can say how stale its prediction was, a read can wait until what
// was acknowledged before it is learned, and a snapshot can wait until the
// model matches the log.
//
// The learning pool must be another pool than the one the first half runs
// on: the first half waits here (Enqueue past the bound, RunInOrder), and
// must never hold the thread the wait depends on.
class LearnStage {
 public:
  // `model` must outlive the stage, whose destructor waits for the work it
  // queued (HostedModel also keeps itself alive in its tasks).
  LearnStage(Model* model, WorkerPool* pool);
  // Waits until the tasks it queued are done with it (a batch's learning
  // still tells the parked reads' pools after the samples count as
  // learned, so CatchUp returning is not enough).
  ~LearnStage();
  LearnStage(const LearnStage&) = delete;
  LearnStage& operator=(const LearnStage&) = delete;

  // Recovery learned `learned` samples directly: counting goes on from it
  // (and the learning curve, which gets a point there if one is due).
  void Reset(std::uint64_t learned) ABSL_LOCKS_EXCLUDED(mutex_);

  // Samples received and on their way here (being made durable): counted
  // as unlearned (Unlearned) until Enqueue takes them over or Withdraw
  // drops them (refused, duplicates).
  void Announce(std::uint64_t samples) ABSL_LOCKS_EXCLUDED(mutex_);
  void Withdraw(std::uint64_t samples) ABSL_LOCKS_EXCLUDED(mutex_);
  // Queues the next samples of the stream (acknowledged at
  // `acknowledged`) to be learned in order, and withdraws `announced`
  // announced samples in the same step (those the batch came from); first
  // waits while more than `max_unlearned` samples wait (a larger batch is
  // queued whole once the stage is idle). `keep_alive` is held until they
  // are learned (the model's owner).
  // `take_overs` says how the model's background work takes over while
  // they are learned (Model::Learn).
  void Enqueue(const ValidatedSamples& samples, absl::Time acknowledged,
               std::shared_ptr<const void> keep_alive, std::uint64_t announced,
               std::size_t max_unlearned,
               BatchTakeOvers take_overs = BatchTakeOvers::kWhereRecorded)
      ABSL_LOCKS_EXCLUDED(mutex_);
  // Applies a take-over record (Model::ApplyTakeOverRecord) on the
  // learning thread once everything queued before it is learned, without
  // waiting for that. `keep_alive` is held until then.
  void EnqueueTakeOver(const TakeOverKey& key,
                       std::shared_ptr<const void> keep_alive);
  // Under TakeOverRule::kLogged: the model's background work found done
  // after learning (each piece once) that its log has no record of yet —
  // the owner appends a record of each to the log. A record that could not
  // be appended is given back (TakeOverNotRecorded) and handed out again.
  std::vector<TakeOverKey> TakeOversToRecord() ABSL_LOCKS_EXCLUDED(mutex_);
  void TakeOverNotRecorded(const TakeOverKey& key) ABSL_LOCKS_EXCLUDED(mutex_);
  // Runs `task` on the learning thread once everything queued before it is
  // learned (a refit), and returns its status; nothing queued after it
  // starts before it ends.
  absl::Status RunInOrder(std::function<absl::Status()> task,
                          std::shared_ptr<const void> keep_alive)
      ABSL_LOCKS_EXCLUDED(mutex_);
  // Waits until every sample and take-over record queued before the call
  // is learned (a snapshot then holds all that was applied).
  void CatchUp() const ABSL_LOCKS_EXCLUDED(mutex_);
  // Every sample queued so far was acknowledged to a client: a read waits
  // until it is learned (HostedModel::CatchUpAcknowledged).
  void MarkAcknowledged() ABSL_LOCKS_EXCLUDED(mutex_);
  // Samples acknowledged so far: what a read waits for, so that a client
  // reads its own writes. Samples queued and not acknowledged here — a
  // cluster replica applying its log's entries of writes other servers
  // took — are not waited for: a replica catching up (whose learning may
  // wait for a metric refresh) answers at once, as of what it has learned.
  std::uint64_t acknowledged() const ABSL_LOCKS_EXCLUDED(mutex_);
  // Waits until `samples` samples are learned, until `deadline` at the
  // latest: whether they are (what a read after a given write waits for,
  // PredictRequest.min_learned).
  bool WaitLearned(std::uint64_t samples, absl::Time deadline) const
      ABSL_LOCKS_EXCLUDED(mutex_);

  // A read parked on `pool` until this stage has learned what it waits for
  // (parked_read.h), and the same read answered. While one is parked,
  // each batch learned has the pools of the reads parked check them at
  // once (WorkerPool::CheckWaiting); and while learning waits for
  // background work taking over (an MLKR fit), that work runs at the
  // process's priority (Model::PrioritizeBackgroundWork): the read depends
  // on it. Thread-safe.
  void ReadParked(WorkerPool* pool) const ABSL_LOCKS_EXCLUDED(parked_mutex_);
  void ReadUnparked(WorkerPool* pool) const ABSL_LOCKS_EXCLUDED(parked_mutex_);

  // Learning's waits for background work at its take-over point (the
  // stream outran a metric refresh, an MLKR fit, an index rebuild), from
  // the stop to the resumption.
  const PauseStatistics& background_work_waits() const {
    return background_work_waits_;
  }
  // How long learning has been stopped for background work now (zero when
  // it is not).
  absl::Duration background_work_wait_now() const;
  // The waits of Enqueue for room (writes held up by learning).
  const PauseStatistics& backlog_waits() const { return backlog_waits_; }
  // Samples learned so far.
  std::uint64_t learned() const ABSL_LOCKS_EXCLUDED(mutex_);
  // Samples queued so far (learned, or to be).
  std::uint64_t queued() const ABSL_LOCKS_EXCLUDED(mutex_);
  // Samples announced or queued, and not learned by a model that had
  // learned `learned` of them.
  std::uint64_t Unlearned(std::uint64_t learned) const
      ABSL_LOCKS_EXCLUDED(mutex_);
  // How fast they are learned now.
  const LearnRate& rate() const { return rate_; }
  // The model's errors against the samples learned (recorded here).
  const LearningCurve& curve() const { return curve_; }
  // The last samples learned with the predictions made for them.
  const RecentPredictions& recent() const { return recent_; }
  // Samples acknowledged and not learned yet, and how long ago the oldest
  // of them was acknowledged (zero when none waits); and when the newest
  // sample queued was acknowledged (InfinitePast: none since the stage
  // began or was reset), which says whether the model is being streamed.
  struct Backlog {
    std::uint64_t samples = 0;
    absl::Duration oldest = absl::ZeroDuration();
    absl::Time newest_acknowledged = absl::InfinitePast();
  };
  Backlog backlog(absl::Time now) const ABSL_LOCKS_EXCLUDED(mutex_);
  // How long before `now` sample `learned` + 1 was acknowledged — the
  // staleness of a prediction that had learned `learned` samples; zero if
  // that sample was not queued yet (one of the batch being answered).
  // Exact as long as no Enqueue runs between the prediction and this call
  // (the writer's order: batches are trimmed there).
  absl::Duration LagAfter(std::uint64_t learned, absl::Time now) const
      ABSL_LOCKS_EXCLUDED(mutex_);
  // The first error learning met (then the model no longer matches its
  // log: the owner refuses further writes); OK so far.
  absl::Status error() const ABSL_LOCKS_EXCLUDED(mutex_);

 private:
  // A queued batch: samples first..last, acknowledged at `acknowledged`.
  struct Batch {
    std::uint64_t first = 0;
    std::uint64_t last = 0;
    absl::Time acknowledged;
  };

  // A queued batch's learning: samples last - size + 1 .. last, of which
  // `unlearned` (the last ones) are still to learn, after `spent` learning
  // the others.
  struct Learning {
    std::uint64_t last = 0;
    std::size_t size = 0;
    ValidatedSamples unlearned;
    BatchTakeOvers take_overs = BatchTakeOvers::kWhereRecorded;
    std::chrono::steady_clock::duration spent{};
  };
  // Learns the batch on the learning thread — or, if learning reaches a
  // take-over point whose background work is not done, as far as it, and
  // the rest once that work is done (SerialQueue::Defer), without holding
  // the thread meanwhile: a learner waiting there would stop every other
  // model's learning on the pool, and the reads waiting for it. Likewise a
  // batch that takes longer than kTimeSlice (a replica replaying its log)
  // goes on after the tasks posted meanwhile.
  static constexpr std::chrono::milliseconds kTimeSlice{20};
  void Learn(Learning batch, std::shared_ptr<const void> keep_alive)
      ABSL_LOCKS_EXCLUDED(mutex_);
  // Learns `samples` (the last of them sample `last`) in pieces that end
  // where the learning curve wants a point, and records it; stops where
  // the model would wait (Model::LearnUntilWait), leaving in `samples` what
  // is left and in *stopped when to go on.
  absl::Status LearnRecordingCurve(ValidatedSamples& samples,
                                   std::uint64_t last,
                                   BatchTakeOvers take_overs,
                                   Model::PartLearned* stopped);
  // Learns a piece that follows sample `learned`, or its first samples up
  // to where the model would wait or past `yield_at` (*stopped then
  // set), keeping the
  // predictions of its last samples in recent_; returns how many.
  absl::StatusOr<std::size_t> LearnPiece(const ValidatedSamples& piece,
                                         std::uint64_t learned,
                                         Model::Clock::time_point yield_at,
                                         BatchTakeOvers take_overs,
                                         Model::PartLearned* stopped);
  // When the batch containing sample `sequence` was acknowledged, if it
  // is still held.
  const Batch* BatchOf(std::uint64_t sequence) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);

  // After learning (TakeOverRule::kLogged): the model's work done and not
  // handed out yet is added to to_record_.
  void NoteWorkDone() ABSL_LOCKS_EXCLUDED(mutex_);
  // The last thing a queued task does with this stage.
  void TaskDone() ABSL_LOCKS_EXCLUDED(mutex_);

  // After a batch is learned: the pools of the reads parked check them.
  void WakeParkedReads() ABSL_LOCKS_EXCLUDED(parked_mutex_, mutex_);
  // Learning stopped at `since` where background work takes over: raises
  // that work if a read is parked.
  void WaitingForBackgroundWork(PauseStatistics::Clock::time_point since);

  Model* const model_;
  // Reads parked on this stage, and whether learning waits for background
  // work now (each raises that work when it sees the other).
  mutable std::atomic<int> reads_parked_ = 0;
  // The pools those reads are parked on, with how many each. Held while
  // a pool is told (so that it outlives the call: a parked read's task
  // keeps it alive until it is answered, and unparks first); before the
  // pool's lock, which is held before mutex_ (its conditions read it).
  mutable Mutex parked_mutex_;
  mutable absl::flat_hash_map<WorkerPool*, int> parked_on_
      ABSL_GUARDED_BY(parked_mutex_);
  std::atomic<bool> waits_for_background_work_ = false;
  // When that wait began (steady clock ticks; 0: learning is not waiting).
  std::atomic<PauseStatistics::Clock::rep> waiting_since_ = 0;
  PauseStatistics backlog_waits_;
  PauseStatistics background_work_waits_;
  LearnRate rate_;            // recorded on the learning thread
  LearningCurve curve_;       // likewise
  RecentPredictions recent_;  // likewise
  const std::shared_ptr<SerialQueue> queue_;

  mutable Mutex mutex_;
  mutable CondVar progressed_;  // learned_ grew
  // Tasks queued (Enqueue, EnqueueTakeOver) that have not yet finished
  // with this stage, and their end (what the destructor waits for).
  std::uint64_t tasks_in_flight_ ABSL_GUARDED_BY(mutex_) = 0;
  CondVar tasks_done_;
  std::uint64_t queued_ ABSL_GUARDED_BY(mutex_) = 0;
  std::uint64_t acknowledged_ ABSL_GUARDED_BY(mutex_) = 0;
  std::uint64_t learned_ ABSL_GUARDED_BY(mutex_) = 0;
  std::uint64_t announced_ ABSL_GUARDED_BY(mutex_) = 0;
  // Batches queued and not trimmed yet (trimmed at the next Enqueue once
  // learned, so LagAfter finds the batch a prediction missed).
  std::deque<Batch> batches_ ABSL_GUARDED_BY(mutex_);
  absl::Time newest_acknowledged_ ABSL_GUARDED_BY(mutex_) =
      absl::InfinitePast();
  // Take-over records queued, and applied to the model.
  std::uint64_t take_overs_queued_ ABSL_GUARDED_BY(mutex_) = 0;
  std::uint64_t take_overs_applied_ ABSL_GUARDED_BY(mutex_) = 0;
  // Work done to be recorded, and all handed out and still unrecorded.
  std::vector<TakeOverKey> to_record_ ABSL_GUARDED_BY(mutex_);
  std::vector<TakeOverKey> handed_out_ ABSL_GUARDED_BY(mutex_);
  absl::Status error_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_HOSTING_LEARN_STAGE_H_
