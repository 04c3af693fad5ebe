#include "server/hosting/learn_batcher.h"

#include <algorithm>
#include <iterator>
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

// The `count` samples of a batch from `first` on learned: the last one's
// place, whether all were duplicates, and with `before`, the predictions
// made for them (taken) and how stale the first was.
LearnBatcher::Result Learned(const LearnOutcome& outcome, std::size_t first,
                             std::size_t count,
                             std::vector<Prediction>* before) {
  LearnBatcher::Result result;
  result.sequence = outcome.sequence[first + count - 1];
  result.duplicate = true;
  for (std::size_t i = first; i < first + count; ++i) {
    result.duplicate = result.duplicate && outcome.duplicate[i];
  }
  result.sync_deferred = outcome.sync_deferred;
  if (before != nullptr) {
    result.before.assign(
        std::make_move_iterator(before->begin() + first),
        std::make_move_iterator(before->begin() + first + count));
    result.learn_lag = outcome.learn_lag[first];
  }
  return result;
}

// Gives the request's ticket back, then answers it.
void Reply(LearnBatcher::Request& request, LearnBatcher::Result result) {
  request.ticket.Release();
  request.done(std::move(result));
}

// Whether any of the request's ids is in `ids`; inserts them all if not.
bool RepeatsAnId(const LearnBatcher::Request& request,
                 absl::flat_hash_set<std::uint64_t>& ids) {
  for (const Sample& sample : request.sample.samples()) {
    if (sample.sample_id != 0 && ids.contains(sample.sample_id)) return true;
  }
  for (const Sample& sample : request.sample.samples()) {
    if (sample.sample_id != 0) ids.insert(sample.sample_id);
  }
  return false;
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
  std::size_t samples = 0;
  for (Request& request : pending_) {
    // A second message with an id already in this batch waits for the next
    // one, where it is found learned (a duplicate), as it would be if the
    // two were learned one after the other — and so does everything after
    // it: a stream resending a sample goes on with the samples after it,
    // which must not be written before it (the first copy may be
    // abandoned).
    const bool full =
        !batch.empty() && samples + request.sample.size() > kMaxBatch;
    if (!later.empty() || full || RepeatsAnId(request, ids)) {
      later.push_back(std::move(request));
    } else {
      samples += request.sample.size();
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

LearnBatcher::Group LearnBatcher::TakeGroup(bool* more) {
  Group group;
  for (Request& request : TakeBatch(more)) {
    if (Abandoned(request)) {
      Reply(request, NotWritten());
    } else {
      group.Add(std::move(request));
    }
  }
  group.Close();
  return group;
}

void LearnBatcher::Group::Add(Request request) {
  deadline_ = std::max(deadline_, request.deadline);
  predict_ |= request.predict;
  // Its samples' announcement is taken over where the batch is queued
  // for learning.
  ticket_.Join(std::move(request.ticket));
  requests_.push_back(std::move(request));
}

void LearnBatcher::Group::Close() {
  std::vector<ValidatedSamples> samples;
  samples.reserve(requests_.size());
  for (const Request& request : requests_) samples.push_back(request.sample);
  batch_ = ValidatedSamples::Concatenate(samples);
}

void LearnBatcher::Group::Answer(const absl::StatusOr<LearnOutcome>& outcome,
                                 std::vector<Prediction>* before) {
  ticket_.Release();  // before the answers: a stream admits its next then
  std::size_t first = 0;
  for (Request& request : requests_) {
    const std::size_t count = request.sample.size();
    if (!outcome.ok()) {
      Reply(request, Failed(outcome.status()));
    } else {
      Reply(request, Learned(*outcome, first, count,
                             request.predict ? before : nullptr));
    }
    first += count;
  }
  requests_.clear();
}

std::optional<LearnBatcher::Group> LearnBatcher::Group::TakeAlone() {
  while (next_alone_ < requests_.size()) {
    Request& request = requests_[next_alone_++];
    WriteTicket own = ticket_.Split(request.sample.size());
    if (Abandoned(request)) {
      own.Release();
      Reply(request, NotWritten());
      continue;
    }
    Group alone;
    request.ticket = std::move(own);
    alone.Add(std::move(request));
    alone.Close();
    return alone;
  }
  return std::nullopt;
}

}  // namespace streamreg
