#include "server/cluster/replicated_log.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/served_by.h"
#include "core/model/take_over_key.h"
#include "server/cluster/log_entries.h"
#include "server/cluster/retried_until.h"

namespace streamreg {

ReplicatedLog::ReplicatedLog(LogStream log, std::string model_name,
                             Options options)
    : log_(std::move(log)),
      name_(std::move(model_name)),
      options_(std::move(options)) {}

void ReplicatedLog::Follow(std::shared_ptr<LogFollower> follower) {
  MutexLock lock(&mutex_);
  follower_ = std::move(follower);
}

ReplicatedLog::FollowerProgress ReplicatedLog::progress() const {
  MutexLock lock(&mutex_);
  if (follower_ == nullptr) return {};
  return {.applied = follower_->applied(),
          .catching_up = follower_->catching_up(),
          .fell_behind = follower_->fell_behind()};
}

bool ReplicatedLog::fell_behind() const {
  MutexLock lock(&mutex_);
  return follower_ != nullptr && follower_->fell_behind();
}

void ReplicatedLog::StopFollowing() {
  MutexLock lock(&mutex_);
  if (follower_ != nullptr) follower_->Stop();
}

void ReplicatedLog::Stop() {
  std::shared_ptr<LogFollower> follower;
  {
    MutexLock lock(&mutex_);
    follower = std::move(follower_);
  }
  // Writes waiting for it are answered now, not at their deadline.
  if (follower != nullptr) follower->Stop();
}

void ReplicatedLog::SetOtherServers(std::vector<std::string> servers) {
  MutexLock lock(&mutex_);
  other_servers_ = std::move(servers);
}

absl::StatusOr<LearnOutcome> ReplicatedLog::AppendSamples(
    const ValidatedSamples& batch, const WriteOptions& options) {
  // Applied (and counted) by the log's follower meanwhile, which knows
  // nothing of options.ticket: the caller's ticket keeps the samples
  // announced until it drops it, once this replica has applied the batch
  // or given up waiting for it.
  //
  // Samples without ids give each batch its own message.
  bool resent = false;
  absl::StatusOr<LearnOutcome> outcome =
      AppendAndWait(BatchMessageId(name_, batch.samples(), UniqueId()),
                    EncodeSamplesEntry(batch.samples(), options.take_overs),
                    options.deadline, &resent);
  if (outcome.ok() && resent) {
    // The log had the batch already: its first copy learned what was new.
    outcome->duplicates += outcome->accepted;
    outcome->accepted = 0;
    outcome->duplicate.assign(batch.size(), true);
  }
  return outcome;
}

absl::Status ReplicatedLog::AppendRefit(
    const std::function<void(std::size_t, std::size_t)>& /*progress*/,
    absl::Time deadline) {
  bool resent = false;
  return AppendAndWait(absl::StrCat(name_, "/refit/", UniqueId()),
                       EncodeRefitEntry(), deadline, &resent)
      .status();
}

absl::Status ReplicatedLog::AppendTakeOver(const TakeOverKey& key) {
  bool resent = false;
  return AppendAndWait(absl::StrCat(name_, "/take-over/", TakeOverKeyName(key),
                                    "/", key.earliest),
                       EncodeTakeOverEntry(key),
                       absl::Now() + options_.append_timeout, &resent)
      .status();
}

absl::Status ReplicatedLog::ReadableHere() const {
  std::shared_ptr<LogFollower> follower = Follower();
  if (follower == nullptr) return absl::OkStatus();
  return WhileCatchingUp(*follower, CallKind::kRead);
}

absl::Status ReplicatedLog::ReadElsewhere(absl::string_view reason) const {
  std::vector<std::string> others = OtherServers();
  if (others.empty()) return absl::OkStatus();
  return SendElsewhereError(absl::StrCat(reason, "; read from"), others);
}

std::string ReplicatedLog::UniqueId() {
  return absl::StrCat(options_.writer, "/", next_unique_.fetch_add(1));
}

std::shared_ptr<LogFollower> ReplicatedLog::Follower() const {
  MutexLock lock(&mutex_);
  return follower_;
}

std::vector<std::string> ReplicatedLog::OtherServers() const {
  MutexLock lock(&mutex_);
  return other_servers_;
}

absl::Status ReplicatedLog::WhileCatchingUp(const LogFollower& follower,
                                            CallKind kind) const {
  return streamreg::WhileCatchingUp(name_, follower.catching_up(),
                                    follower.applied(), OtherServers(), kind);
}

absl::StatusOr<LearnOutcome> ReplicatedLog::AppendAndWait(
    std::string message_id, std::string payload, absl::Time deadline,
    bool* resent) {
  std::shared_ptr<LogFollower> follower = Follower();
  if (follower == nullptr) {
    return absl::UnavailableError(absl::StrCat(
        "model '", name_, "' is no longer served by this server; retry"));
  }
  // Just hosted and still replaying its log's tail, this replica would
  // answer only once all of it is applied: a server of the model that is
  // not catching up takes the write. (Alone, it waits.)
  if (absl::Status elsewhere = WhileCatchingUp(*follower, CallKind::kWrite);
      !elsewhere.ok()) {
    return elsewhere;
  }
  absl::StatusOr<LogStream::Appended> appended =
      RetriedUntil(std::min(absl::Now() + options_.append_timeout, deadline),
                   [&] { return log_.Append(message_id, payload); });
  if (!appended.ok()) return appended.status();
  *resent = appended->duplicate;
  // A retried message answers with its first copy's entry, whose outcome
  // is the one to report (and whose bytes may differ from this copy's).
  // Applying may wait behind the model's background work (an index
  // take-over) as long as a single server's write would.
  absl::StatusOr<LearnOutcome> outcome =
      appended->duplicate
          ? follower->WaitApplied(appended->sequence, deadline)
          : follower->ApplyAppended({.sequence = appended->sequence,
                                     .subject = log_.subject(),
                                     .message_id = std::move(message_id),
                                     .payload = std::move(payload)},
                                    deadline);
  if (absl::IsDeadlineExceeded(outcome.status())) {
    // Stored, not yet applied here: the client's retry (same ids) finds
    // the same entry.
    return absl::UnavailableError(outcome.status().message());
  }
  return outcome;
}

}  // namespace streamreg
