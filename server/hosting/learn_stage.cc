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
                         std::uint64_t announced, std::size_t max_unlearned) {
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
  }
  queue_->Post([this, last, samples, keep_alive = std::move(keep_alive)] {
    Learn(last, samples);
  });
}

void LearnStage::Learn(std::uint64_t last, const ValidatedSamples& batch) {
  const auto start = std::chrono::steady_clock::now();
  absl::Status status = LearnRecordingCurve(batch, last);
  rate_.Record(batch.size(),
               absl::FromChrono(std::chrono::steady_clock::now() - start));
  MutexLock lock(&mutex_);
  if (!status.ok() && error_.ok()) {
    error_ = absl::InternalError(
        absl::StrCat("learning samples ", last - batch.size() + 1, "..", last,
                     " failed after they were logged: ", status.message()));
  }
  learned_ = last;
  progressed_.SignalAll();
}

absl::Status LearnStage::LearnRecordingCurve(const ValidatedSamples& batch,
                                             std::uint64_t last) {
  ValidatedSamples samples = batch;
  std::uint64_t learned = last - samples.size();
  while (!samples.empty()) {
    const std::uint64_t due = curve_.next_due();
    const std::size_t piece =
        due > learned ? std::min<std::uint64_t>(samples.size(), due - learned)
                      : samples.size();
    if (absl::Status status = LearnPiece(samples.First(piece), learned);
        !status.ok()) {
      return status;
    }
    learned += piece;
    samples = samples.Subspan(piece, samples.size() - piece);
    if (curve_.Due(learned)) curve_.Record(learned, model_->stats());
  }
  return absl::OkStatus();
}

absl::Status LearnStage::LearnPiece(const ValidatedSamples& piece,
                                    std::uint64_t learned) {
  // The predictions of the samples the status page shows are kept: only
  // the last RecentPredictions::kCapacity of a piece can be.
  const std::size_t unshown =
      piece.size() - std::min(piece.size(), RecentPredictions::kCapacity);
  if (unshown > 0) {
    if (absl::Status status = model_->Learn(piece.First(unshown));
        !status.ok()) {
      return status;
    }
  }
  const ValidatedSamples shown = piece.Subspan(unshown, piece.size() - unshown);
  std::vector<Prediction> before;
  if (absl::Status status = model_->Learn(shown, &before); !status.ok()) {
    return status;
  }
  recent_.Record(learned + unshown + 1, shown.samples(), before);
  return absl::OkStatus();
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
  while (learned_ < target) progressed_.Wait(&mutex_);
}

void LearnStage::MarkAcknowledged() {
  MutexLock lock(&mutex_);
  acknowledged_ = queued_;
}

void LearnStage::CatchUpAcknowledged() const {
  MutexLock lock(&mutex_);
  const std::uint64_t target = acknowledged_;
  while (learned_ < target) progressed_.Wait(&mutex_);
}

std::uint64_t LearnStage::learned() const {
  MutexLock lock(&mutex_);
  return learned_;
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
  Backlog backlog{.samples = queued_ - learned_};
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
