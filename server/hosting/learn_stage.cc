#include "server/hosting/learn_stage.h"

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/model/prediction.h"

namespace streamreg {

LearnStage::LearnStage(Model* model, WorkerPool* pool)
    : model_(model), queue_(SerialQueue::Create(pool)) {}

LearnStage::~LearnStage() {
  MutexLock lock(&mutex_);
  while (tasks_in_flight_ > 0) tasks_done_.Wait(&mutex_);
}

void LearnStage::TaskDone() {
  MutexLock lock(&mutex_);
  if (--tasks_in_flight_ == 0) tasks_done_.SignalAll();
}

void LearnStage::Reset(std::uint64_t learned) {
  {
    MutexLock lock(&mutex_);
    queued_ = learned;
    learned_ = learned;
    acknowledged_ = learned;
    batches_.clear();
  }
  // Recovery's points (at most as many as learning would record).
  if (learned > 0 && curve_.Due(learned)) {
    curve_.Record(learned, model_->stats());
  }
}

void LearnStage::Enqueue(const ValidatedSamples& samples,
                         absl::Time acknowledged,
                         std::shared_ptr<const void> keep_alive,
                         std::uint64_t announced, std::size_t max_unlearned,
                         BatchTakeOvers take_overs) {
  if (samples.empty()) {
    Withdraw(announced);
    return;
  }
  std::uint64_t last = 0;
  {
    MutexLock lock(&mutex_);
    if (queued_ - learned_ > max_unlearned) {
      const PauseStatistics::Clock::time_point start =
          PauseStatistics::Clock::now();
      while (queued_ - learned_ > max_unlearned) progressed_.Wait(&mutex_);
      backlog_waits_.RecordSince(start);
    }
    while (!batches_.empty() && batches_.front().last <= learned_) {
      batches_.pop_front();
    }
    // Taken over in one step: never counted twice, nor missed.
    announced_ -= std::min(announced_, announced);
    const std::uint64_t first = queued_ + 1;
    queued_ += samples.size();
    last = queued_;
    batches_.push_back({first, last, acknowledged});
    newest_acknowledged_ = std::max(newest_acknowledged_, acknowledged);
    ++tasks_in_flight_;
  }
  queue_->Post([this,
                batch = Learning{.last = last,
                                 .size = samples.size(),
                                 .unlearned = samples,
                                 .take_overs = take_overs},
                keep_alive = std::move(keep_alive)]() mutable {
    Learn(std::move(batch), std::move(keep_alive));
  });
}

void LearnStage::Learn(Learning batch, std::shared_ptr<const void> keep_alive) {
  const auto start = std::chrono::steady_clock::now();
  Model::PartLearned stopped;
  absl::Status status = LearnRecordingCurve(batch.unlearned, batch.last,
                                            batch.take_overs, &stopped);
  batch.spent += std::chrono::steady_clock::now() - start;
  if (status.ok() && stopped.resume_when != nullptr) {
    // Background work takes over at the next sample and is not done, or
    // the batch has had its time slice: the rest is learned once that work
    // is done, after the tasks posted to the pool meanwhile (other models'
    // learning, and the reads waiting for it), and the thread goes to them.
    const bool waits = stopped.waits_for_background_work;
    const PauseStatistics::Clock::time_point since =
        PauseStatistics::Clock::now();
    if (waits) WaitingForBackgroundWork(since);
    queue_->Defer(std::move(stopped.resume_when),
                  [this, batch = std::move(batch), waits, since,
                   keep_alive = std::move(keep_alive)]() mutable {
                    if (waits) {
                      waits_for_background_work_.store(false);
                      waiting_since_.store(0);
                      background_work_waits_.RecordSince(since);
                    }
                    Learn(std::move(batch), std::move(keep_alive));
                  });
    return;
  }
  rate_.Record(batch.size, absl::FromChrono(batch.spent));
  NoteWorkDone();
  {
    MutexLock lock(&mutex_);
    if (!status.ok() && error_.ok()) {
      error_ = absl::InternalError(absl::StrCat(
          "learning samples ", batch.last - batch.size + 1, "..", batch.last,
          " failed after they were logged: ", status.message()));
    }
    learned_ = batch.last;
    progressed_.SignalAll();
  }
  WakeParkedReads();
  TaskDone();
}

absl::Status LearnStage::LearnRecordingCurve(ValidatedSamples& samples,
                                             std::uint64_t last,
                                             BatchTakeOvers take_overs,
                                             Model::PartLearned* stopped) {
  const Model::Clock::time_point yield_at = Model::Clock::now() + kTimeSlice;
  std::uint64_t learned = last - samples.size();
  while (!samples.empty()) {
    const std::uint64_t due = curve_.next_due();
    const std::size_t piece =
        due > learned ? std::min<std::uint64_t>(samples.size(), due - learned)
                      : samples.size();
    absl::StatusOr<std::size_t> done = LearnPiece(
        samples.First(piece), learned, yield_at, take_overs, stopped);
    if (!done.ok()) return done.status();
    learned += *done;
    samples = samples.Subspan(*done, samples.size() - *done);
    if (curve_.Due(learned)) curve_.Record(learned, model_->stats());
    if (stopped->resume_when != nullptr) break;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::size_t> LearnStage::LearnPiece(
    const ValidatedSamples& piece, std::uint64_t learned,
    Model::Clock::time_point yield_at, BatchTakeOvers take_overs,
    Model::PartLearned* stopped) {
  // The predictions of the samples the status page shows are kept: only
  // the last RecentPredictions::kCapacity of a piece can be.
  const std::size_t unshown =
      piece.size() - std::min(piece.size(), RecentPredictions::kCapacity);
  if (unshown > 0) {
    absl::StatusOr<Model::PartLearned> part = model_->LearnUntilWait(
        piece.First(unshown), nullptr, yield_at, take_overs);
    if (!part.ok()) return part.status();
    if (part->resume_when != nullptr) {
      const std::size_t done = part->learned;
      *stopped = *std::move(part);
      return done;
    }
  }
  const ValidatedSamples shown = piece.Subspan(unshown, piece.size() - unshown);
  std::vector<Prediction> before;
  absl::StatusOr<Model::PartLearned> part = model_->LearnUntilWait(
      shown, &before, Model::Clock::time_point::max(), take_overs);
  if (!part.ok()) return part.status();
  recent_.Record(learned + unshown + 1, shown.samples().first(part->learned),
                 before);
  const std::size_t done = unshown + part->learned;
  *stopped = *std::move(part);
  return done;
}

void LearnStage::WaitingForBackgroundWork(
    PauseStatistics::Clock::time_point since) {
  waiting_since_.store(since.time_since_epoch().count());
  waits_for_background_work_.store(true);
  // Seen by this or by ReadParked, whichever comes second.
  if (reads_parked_.load() > 0) model_->PrioritizeBackgroundWork();
}

absl::Duration LearnStage::background_work_wait_now() const {
  const PauseStatistics::Clock::rep since = waiting_since_.load();
  if (since == 0) return absl::ZeroDuration();
  return absl::FromChrono(PauseStatistics::Clock::now() -
                          PauseStatistics::Clock::time_point(
                              PauseStatistics::Clock::duration(since)));
}

void LearnStage::ReadParked(WorkerPool* pool) const {
  {
    MutexLock lock(&parked_mutex_);
    ++parked_on_[pool];
  }
  reads_parked_.fetch_add(1);
  if (waits_for_background_work_.load()) model_->PrioritizeBackgroundWork();
}

void LearnStage::ReadUnparked(WorkerPool* pool) const {
  reads_parked_.fetch_sub(1);
  MutexLock lock(&parked_mutex_);
  if (const auto it = parked_on_.find(pool);
      it != parked_on_.end() && --it->second == 0) {
    parked_on_.erase(it);
  }
}

void LearnStage::WakeParkedReads() {
  if (reads_parked_.load() == 0) return;
  MutexLock lock(&parked_mutex_);
  for (const auto& [pool, reads] : parked_on_) pool->CheckWaiting();
}

void LearnStage::EnqueueTakeOver(const TakeOverKey& key,
                                 std::shared_ptr<const void> keep_alive) {
  {
    MutexLock lock(&mutex_);
    ++take_overs_queued_;
    ++tasks_in_flight_;
  }
  queue_->Post([this, key, keep_alive = std::move(keep_alive)] {
    (void)model_->ApplyTakeOverRecord(key);
    {
      MutexLock lock(&mutex_);
      ++take_overs_applied_;
      progressed_.SignalAll();
    }
    TaskDone();
  });
}

void LearnStage::NoteWorkDone() {
  if (model_->config().take_over != TakeOverRule::kLogged) return;
  const std::vector<UnrecordedWork> unrecorded = model_->UnrecordedTakeOvers();
  const auto contains = [](const std::vector<TakeOverKey>& keys,
                           const TakeOverKey& key) {
    return std::find(keys.begin(), keys.end(), key) != keys.end();
  };
  const auto gone = [&unrecorded](const TakeOverKey& key) {
    return std::none_of(
        unrecorded.begin(), unrecorded.end(),
        [&key](const UnrecordedWork& work) { return work.key == key; });
  };
  MutexLock lock(&mutex_);
  // What was recorded since (by this server or, in a cluster, another),
  // or superseded, is no longer handed out nor to be recorded.
  std::erase_if(handed_out_, gone);
  std::erase_if(to_record_, gone);
  for (const UnrecordedWork& work : unrecorded) {
    if (!work.done || contains(handed_out_, work.key)) continue;
    handed_out_.push_back(work.key);
    to_record_.push_back(work.key);
  }
}

std::vector<TakeOverKey> LearnStage::TakeOversToRecord() {
  MutexLock lock(&mutex_);
  return std::exchange(to_record_, {});
}

void LearnStage::TakeOverNotRecorded(const TakeOverKey& key) {
  MutexLock lock(&mutex_);
  std::erase(handed_out_, key);
}

absl::Status LearnStage::RunInOrder(std::function<absl::Status()> task,
                                    std::shared_ptr<const void> keep_alive) {
  Mutex done_mutex;
  CondVar done_signal;
  bool done = false;
  absl::Status status;
  queue_->Post([&, keep_alive = std::move(keep_alive)] {
    absl::Status result = task();
    MutexLock lock(&done_mutex);
    status = std::move(result);
    done = true;
    done_signal.SignalAll();
  });
  MutexLock lock(&done_mutex);
  while (!done) done_signal.Wait(&done_mutex);
  return status;
}

void LearnStage::CatchUp() const {
  MutexLock lock(&mutex_);
  const std::uint64_t target = queued_;
  const std::uint64_t take_overs = take_overs_queued_;
  while (learned_ < target || take_overs_applied_ < take_overs) {
    progressed_.Wait(&mutex_);
  }
}

void LearnStage::MarkAcknowledged() {
  MutexLock lock(&mutex_);
  acknowledged_ = queued_;
}

std::uint64_t LearnStage::acknowledged() const {
  MutexLock lock(&mutex_);
  return acknowledged_;
}

bool LearnStage::WaitLearned(std::uint64_t samples, absl::Time deadline) const {
  MutexLock lock(&mutex_);
  while (learned_ < samples) {
    if (!progressed_.WaitUntil(&mutex_, deadline)) return learned_ >= samples;
  }
  return true;
}

std::uint64_t LearnStage::learned() const {
  MutexLock lock(&mutex_);
  return learned_;
}

std::uint64_t LearnStage::queued() const {
  MutexLock lock(&mutex_);
  return queued_;
}

void LearnStage::Announce(std::uint64_t samples) {
  MutexLock lock(&mutex_);
  announced_ += samples;
}

void LearnStage::Withdraw(std::uint64_t samples) {
  MutexLock lock(&mutex_);
  announced_ -= std::min(announced_, samples);
}

std::uint64_t LearnStage::Unlearned(std::uint64_t learned) const {
  MutexLock lock(&mutex_);
  return announced_ + (queued_ > learned ? queued_ - learned : 0);
}

const LearnStage::Batch* LearnStage::BatchOf(std::uint64_t sequence) const {
  for (const Batch& batch : batches_) {
    if (batch.first <= sequence && sequence <= batch.last) return &batch;
  }
  return nullptr;
}

absl::Duration LearnStage::LagAfter(std::uint64_t learned,
                                    absl::Time now) const {
  MutexLock lock(&mutex_);
  const Batch* missed = BatchOf(learned + 1);
  // A batch acknowledged after `now` (queued between the caller's reading
  // of the clock and this lock) has not made anything stale yet.
  return missed != nullptr
             ? std::max(now - missed->acknowledged, absl::ZeroDuration())
             : absl::ZeroDuration();
}

LearnStage::Backlog LearnStage::backlog(absl::Time now) const {
  MutexLock lock(&mutex_);
  Backlog backlog{.samples = queued_ - learned_,
                  .newest_acknowledged = newest_acknowledged_};
  if (const Batch* oldest = BatchOf(learned_ + 1); oldest != nullptr) {
    backlog.oldest = std::max(now - oldest->acknowledged, absl::ZeroDuration());
  }
  return backlog;
}

absl::Status LearnStage::error() const {
  MutexLock lock(&mutex_);
  return error_;
}

}  // namespace streamreg
