#include "server/hosting/learn_batcher.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "server/hosting/hosted_model.h"

namespace streamreg {
namespace {

LearnBatcher::Result Failed(absl::Status status) {
  LearnBatcher::Result result;
  result.status = std::move(status);
  return result;
}

// Sample `i` of a batch learned: its place, and with `before`, the
// prediction made for it (taken) and how stale that was.
LearnBatcher::Result Learned(const LearnOutcome& outcome, std::size_t i,
                             Prediction* before) {
  LearnBatcher::Result result;
  result.sequence = outcome.sequence[i];
  result.duplicate = outcome.duplicate[i];
  if (before != nullptr) {
    result.before = std::move(*before);
    result.learn_lag = outcome.learn_lag[i];
  }
  return result;
}

}  // namespace

void LearnBatcher::Submit(const std::shared_ptr<HostedModel>& model,
                          Request request) {
  LearnBatcher& batcher = model->learn_batcher();
  model->AnnounceSamples(1);
  {
    MutexLock lock(&batcher.mutex_);
    batcher.pending_.push_back(std::move(request));
    if (batcher.scheduled_) return;
    batcher.scheduled_ = true;
  }
  model->writes().PostUrgent([model] { Drain(model); });
}

std::vector<LearnBatcher::Request> LearnBatcher::TakeBatch() {
  MutexLock lock(&mutex_);
  std::vector<Request> batch;
  std::vector<Request> later;
  absl::flat_hash_set<std::uint64_t> ids;
  for (Request& request : pending_) {
    const std::uint64_t id = request.sample.sample_id;
    // A second message with an id already in this batch waits for the next
    // one, where it is found learned (a duplicate), as it would be if the
    // two were learned one after the other.
    if (batch.size() == kMaxBatch || (id != 0 && !ids.insert(id).second)) {
      later.push_back(std::move(request));
    } else {
      batch.push_back(std::move(request));
    }
  }
  pending_ = std::move(later);
  return batch;
}

void LearnBatcher::Drain(const std::shared_ptr<HostedModel>& model) {
  LearnBatcher& batcher = model->learn_batcher();
  std::vector<Request> requests = batcher.TakeBatch();
  {
    // More arrived meanwhile (or were held back): learn them after this
    // batch, behind whatever else the write queue holds by then.
    MutexLock lock(&batcher.mutex_);
    if (batcher.pending_.empty()) {
      batcher.scheduled_ = false;
    } else {
      model->writes().PostUrgent([model] { Drain(model); });
    }
  }
  std::vector<Request> live;
  std::vector<Sample> samples;
  for (Request& request : requests) {
    if (request.cancelled && request.cancelled()) {
      model->WithdrawSamples(1);
      request.done(
          Failed(absl::CancelledError("not learned, the call was cancelled")));
      continue;
    }
    samples.push_back(request.sample);
    live.push_back(std::move(request));
  }
  if (live.empty()) return;
  std::vector<Prediction> before;
  absl::Time deadline = absl::InfinitePast();
  bool predict = false;
  for (const Request& request : live) {
    deadline = std::max(deadline, request.deadline);
    predict |= request.predict;
  }
  absl::StatusOr<LearnOutcome> outcome =
      model->Learn(samples, predict ? &before : nullptr,
                   {.deadline = deadline, .announced = true, .streamed = true});
  if (!outcome.ok() && live.size() > 1) {
    // Refused as a whole (the sample limit, a failing disk): learn each
    // alone, so each gets the answer it would have had on its own.
    for (Request& request : live) LearnAlone(*model, request);
    return;
  }
  for (std::size_t i = 0; i < live.size(); ++i) {
    if (!outcome.ok()) {
      live[i].done(Failed(outcome.status()));
      continue;
    }
    live[i].done(Learned(*outcome, i, predict ? &before[i] : nullptr));
  }
}

void LearnBatcher::LearnAlone(HostedModel& model, Request& request) {
  std::vector<Prediction> before;
  absl::StatusOr<LearnOutcome> outcome =
      model.Learn({&request.sample, 1}, request.predict ? &before : nullptr,
                  {.deadline = request.deadline, .streamed = true});
  if (!outcome.ok()) {
    request.done(Failed(outcome.status()));
    return;
  }
  request.done(Learned(*outcome, 0, request.predict ? &before[0] : nullptr));
}

}  // namespace streamreg
