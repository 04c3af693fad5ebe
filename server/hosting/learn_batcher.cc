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
void Answer(LearnBatcher::Request& request, LearnBatcher::Result result) {
  request.ticket.Release();
  request.done(std::move(result));
}

// Writes one request alone, with its part of the refused group's ticket.
void WriteAlone(const LearnBatcher::Write& write,
                LearnBatcher::Request& request, WriteTicket ticket) {
  std::vector<Prediction> before;
  absl::StatusOr<LearnOutcome> outcome = write(
      request.sample, request.predict ? &before : nullptr,
      {.deadline = request.deadline, .ticket = &ticket, .streamed = true});
  ticket.Release();
  if (!outcome.ok()) {
    Answer(request, Failed(outcome.status()));
    return;
  }
  Answer(request, Learned(*outcome, 0, request.sample.size(),
                          request.predict ? &before : nullptr));
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

bool LearnBatcher::Drain(const Write& write) {
  bool more = false;
  std::vector<Request> requests = TakeBatch(&more);
  std::vector<Request> live;
  std::vector<ValidatedSamples> samples;
  // The group's: its samples' announcement is taken over where the batch
  // is queued for learning.
  WriteTicket ticket;
  for (Request& request : requests) {
    if (Abandoned(request)) {
      Answer(request, NotWritten());
      continue;
    }
    samples.push_back(request.sample);
    ticket.Join(std::move(request.ticket));
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
  absl::StatusOr<LearnOutcome> outcome =
      batch.ok()
          ? write(*batch, predict ? &before : nullptr,
                  {.deadline = deadline,
                   .ticket = &ticket,
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
      WriteTicket own = ticket.Split(request.sample.size());
      if (Abandoned(request)) {
        own.Release();
        Answer(request, NotWritten());
        continue;
      }
      WriteAlone(write, request, std::move(own));
    }
    return more;
  }
  ticket.Release();  // before the answers: a stream admits its next then
  std::size_t first = 0;
  for (Request& request : live) {
    const std::size_t count = request.sample.size();
    if (!outcome.ok()) {
      Answer(request, Failed(outcome.status()));
    } else {
      Answer(request, Learned(*outcome, first, count,
                              request.predict ? &before : nullptr));
    }
    first += count;
  }
  return more;
}

}  // namespace streamreg
