#include "server/hosting/learn_batcher.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"

namespace streamreg {
namespace {

LearnBatcher::Result Failed(absl::Status status) {
  LearnBatcher::Result result;
  result.status = std::move(status);
  return result;
}

bool Abandoned(const LearnBatcher::Request& request) {
  return request.abandoned && request.abandoned();
}

LearnBatcher::Result NotWritten() {
  return Failed(absl::CancelledError(
      "not learned: the call was cancelled, or ended at an earlier sample"));
}

// Sample `i` of a batch learned: its place, and with `before`, the
// prediction made for it (taken) and how stale that was.
LearnBatcher::Result Learned(const LearnOutcome& outcome, std::size_t i,
                             Prediction* before) {
  LearnBatcher::Result result;
  result.sequence = outcome.sequence[i];
  result.duplicate = outcome.duplicate[i];
  result.sync_deferred = outcome.sync_deferred;
  if (before != nullptr) {
    result.before = std::move(*before);
    result.learn_lag = outcome.learn_lag[i];
  }
  return result;
}

// Writes one request alone (its sample not announced any more).
void WriteAlone(const LearnBatcher::Write& write,
                LearnBatcher::Request& request) {
  std::vector<Prediction> before;
  absl::StatusOr<LearnOutcome> outcome =
      write(request.sample, request.predict ? &before : nullptr,
            {.deadline = request.deadline, .streamed = true});
  if (!outcome.ok()) {
    request.done(Failed(outcome.status()));
    return;
  }
  request.done(Learned(*outcome, 0, request.predict ? &before[0] : nullptr));
}

}  // namespace

bool LearnBatcher::Add(Request request) {
  MutexLock lock(&mutex_);
  pending_.push_back(std::move(request));
  if (scheduled_) return false;
  scheduled_ = true;
  return true;
}

std::vector<LearnBatcher::Request> LearnBatcher::TakeBatch(bool* more) {
  MutexLock lock(&mutex_);
  std::vector<Request> batch;
  std::vector<Request> later;
  absl::flat_hash_set<std::uint64_t> ids;
  for (Request& request : pending_) {
    const std::uint64_t id = request.sample[0].sample_id;
    // A second message with an id already in this batch waits for the next
    // one, where it is found learned (a duplicate), as it would be if the
    // two were learned one after the other — and so does everything after
    // it: a stream resending a sample goes on with the samples after it,
    // which must not be written before it (the first copy may be
    // abandoned).
    if (!later.empty() || batch.size() == kMaxBatch ||
        (id != 0 && !ids.insert(id).second)) {
      later.push_back(std::move(request));
    } else {
      batch.push_back(std::move(request));
    }
  }
  pending_ = std::move(later);
  // More arrived meanwhile (or were held back): they are written after
  // this batch, behind whatever else the write queue holds by then.
  *more = !pending_.empty();
  scheduled_ = *more;
  return batch;
}

bool LearnBatcher::Drain(const Write& write, const Withdraw& withdraw) {
  bool more = false;
  std::vector<Request> requests = TakeBatch(&more);
  std::vector<Request> live;
  std::vector<ValidatedSamples> samples;
  for (Request& request : requests) {
    if (Abandoned(request)) {
      withdraw(1);
      request.done(NotWritten());
      continue;
    }
    samples.push_back(request.sample);
    live.push_back(std::move(request));
  }
  if (live.empty()) return more;
  std::vector<Prediction> before;
  absl::Time deadline = absl::InfinitePast();
  bool predict = false;
  for (const Request& request : live) {
    deadline = std::max(deadline, request.deadline);
    predict |= request.predict;
  }
  absl::StatusOr<ValidatedSamples> batch =
      ValidatedSamples::Concatenate(samples);
  if (!batch.ok()) withdraw(live.size());
  absl::StatusOr<LearnOutcome> outcome =
      batch.ok()
          ? write(*batch, predict ? &before : nullptr,
                  {.deadline = deadline,
                   .announced = true,
                   .streamed = true,
                   // An answer waiting for durability is not kept waiting.
                   .sync_later = !predict})
          : batch.status();
  if (!outcome.ok() && live.size() > 1) {
    // Refused as a whole (the sample limit, a failing disk): each alone,
    // so each gets the answer it would have had on its own — unless an
    // earlier one of its call failed just now (room found for a later
    // sample must not put it before the earlier one).
    for (Request& request : live) {
      if (Abandoned(request)) {
        request.done(NotWritten());  // (the batch withdrew it)
        continue;
      }
      WriteAlone(write, request);
    }
    return more;
  }
  for (std::size_t i = 0; i < live.size(); ++i) {
    if (!outcome.ok()) {
      live[i].done(Failed(outcome.status()));
      continue;
    }
    live[i].done(Learned(*outcome, i, predict ? &before[i] : nullptr));
  }
  return more;
}

}  // namespace streamreg
