#include "server/cluster/log_follower.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "common/exponential_backoff.h"
#include "core/base/background_thread.h"
#include "core/base/stoppable_sleep.h"
#include "spdlog/spdlog.h"

namespace streamreg {
namespace {

// How long the follower waits for an entry before it looks whether it was
// asked to stop, and how long it pauses after it could not make a cursor.
constexpr absl::Duration kPoll = absl::Milliseconds(100);
// The longest pause between two tries to make a cursor (from kPoll,
// doubling with each failure).
constexpr absl::Duration kLongestOpenPause = absl::Seconds(1);

}  // namespace

std::unique_ptr<LogFollower> LogFollower::Start(const LogStream& log,
                                                ReplicaApplier applier,
                                                std::uint64_t from,
                                                std::uint64_t stored) {
  from = std::max<std::uint64_t>(from, 1);
  if (stored < from) {
    spdlog::info("event=cluster_caught_up model={} log_sequence={} seconds=0",
                 applier.model_name(), from - 1);
  }
  std::unique_ptr<LogFollower> follower(
      new LogFollower(log, std::move(applier), from, stored));
  LogFollower* self = follower.get();
  follower->thread_ =
      std::jthread([self](std::stop_token stop) { self->Run(stop); });
  return follower;
}

LogFollower::LogFollower(const LogStream& log, ReplicaApplier applier,
                         std::uint64_t from, std::uint64_t stored)
    : log_(log),
      applier_(std::move(applier)),
      stored_at_start_(stored),
      applied_(from - 1) {}

LogFollower::~LogFollower() {
  Stop();
  if (thread_.joinable()) thread_.join();
}

void LogFollower::Stop() {
  thread_.request_stop();
  MutexLock lock(&mutex_);
  stopped_ = true;
  applied_changed_.SignalAll();
}

std::uint64_t LogFollower::applied() const {
  MutexLock lock(&mutex_);
  return applied_;
}

bool LogFollower::catching_up() const {
  MutexLock lock(&mutex_);
  return applied_ < stored_at_start_;
}

bool LogFollower::fell_behind() const {
  MutexLock lock(&mutex_);
  return fell_behind_;
}

bool LogFollower::Stalled(absl::Time last_progress) const {
  MutexLock lock(&mutex_);
  return awaited_ > applied_ && absl::Now() - last_progress > kStallTimeout;
}

std::uint64_t LogFollower::SilentWhileBehind(absl::Time last_entry,
                                             absl::Time* last_check) {
  const absl::Time now = absl::Now();
  if (now - last_entry < kIdleCheck || now - *last_check < kIdleCheck) {
    return 0;
  }
  *last_check = now;
  absl::StatusOr<std::uint64_t> last = log_.LastSequence();
  const std::uint64_t done = applied();
  if (!last.ok()) {
    spdlog::warn(
        "event=cluster_follower_idle_check_failed model={} applied={} "
        "error=\"{}\"",
        applier_.model_name(), done, std::string(last.status().message()));
    return 0;
  }
  if (*last <= done) return 0;
  spdlog::info(
      "event=cluster_follower_reread model={} from={} why=\"the log holds "
      "entries up to {}; none came for {:.1f} s\"",
      applier_.model_name(), done + 1, *last,
      absl::ToDoubleSeconds(now - last_entry));
  return *last;
}

void LogFollower::ApplyStored(std::uint64_t last, std::stop_token stop) {
  const std::uint64_t from = applied() + 1;
  last = std::min(last, from + kMostReadStored - 1);
  for (std::uint64_t sequence = from;
       sequence <= last && !stop.stop_requested(); ++sequence) {
    absl::StatusOr<LogEntry> entry = log_.Entry(sequence);
    if (!entry.ok()) {
      spdlog::warn(
          "event=cluster_follower_read_stored_failed model={} sequence={} "
          "error=\"{}\"",
          applier_.model_name(), sequence,
          std::string(entry.status().message()));
      return;
    }
    ApplyIfNext(*entry);
  }
}

void LogFollower::Run(std::stop_token stop) {
  BeginBackgroundThread("log-follower");
  if (!OpenCursor(stop)) return;
  absl::Time last_progress = absl::Now();  // an entry, or a new cursor
  absl::Time last_entry = last_progress;
  absl::Time last_idle_check = absl::InfinitePast();
  while (!stop.stop_requested()) {
    absl::StatusOr<LogEntry> entry = cursor_->Next(kPoll);
    if (!entry.ok()) {
      // Nothing new; or the cursor broke (a delivery lost, its consumer's
      // server gone) or the cluster cannot deliver now: read on from a
      // new consumer, as when an awaited entry does not come.
      const bool broke = !absl::IsDeadlineExceeded(entry.status());
      if (broke) {
        spdlog::info("event=cluster_follower_reread model={} from={} why={}",
                     applier_.model_name(), applied() + 1,
                     std::string(entry.status().message()));
      }
      const std::uint64_t silent_behind =
          SilentWhileBehind(last_entry, &last_idle_check);
      if (silent_behind > 0) ApplyStored(silent_behind, stop);
      if (broke || silent_behind > 0 || Stalled(last_progress)) {
        if (!OpenCursor(stop)) return;
        last_progress = absl::Now();
      }
      continue;
    }
    last_progress = last_entry = absl::Now();
    const std::uint64_t expected = applied() + 1;
    // The cursor delivers each entry once, in order; an entry again after
    // its consumer was replaced is skipped, and one ahead of the one due
    // has the entries between read first.
    if (entry->sequence < expected) continue;
    if (entry->sequence > expected) {
      if (CompactedPast(expected)) {
        spdlog::warn(
            "event=cluster_follower_behind model={} applied={} next_in_log={}",
            applier_.model_name(), expected - 1, entry->sequence);
        MutexLock lock(&mutex_);
        fell_behind_ = true;
        applied_changed_.SignalAll();
        return;
      }
      // The entries between were not delivered: read from the stream's
      // leader (or, past kMostReadStored, from a new cursor).
      ApplyStored(entry->sequence - 1, stop);
      if (applied() + 1 != entry->sequence) {
        Refollow(applied() + 1).IgnoreError();  // tried again
        continue;
      }
    }
    ApplyIfNext(*entry);
  }
}

absl::Status LogFollower::Refollow(std::uint64_t from) {
  absl::StatusOr<LogStream::Cursor> fresh = log_.Follow(from);
  // The old one answers UNAVAILABLE: tried again.
  if (!fresh.ok()) return fresh.status();
  cursor_.reset();  // its subscription goes first
  cursor_.emplace(*std::move(fresh));
  return absl::OkStatus();
}

bool LogFollower::OpenCursor(std::stop_token stop) {
  for (int failures = 1; !stop.stop_requested(); ++failures) {
    const absl::Status opened = Refollow(applied() + 1);
    if (opened.ok()) return true;
    const absl::Duration pause =
        BackoffCeiling(failures, kPoll, kLongestOpenPause, 2.0);
    spdlog::warn(
        "event=cluster_follower_open_failed model={} from={} failures={} "
        "retry_in_seconds={:.1f} error=\"{}\"",
        applier_.model_name(), applied() + 1, failures,
        absl::ToDoubleSeconds(pause), std::string(opened.message()));
    SleepForUnlessStopped(stop, pause);
  }
  return false;
}

void LogFollower::ApplyIfNext(const LogEntry& entry) {
  MutexLock apply(&apply_mutex_);
  {
    MutexLock lock(&mutex_);
    if (stopped_ || fell_behind_ || entry.sequence != applied_ + 1) return;
  }
  // Noted applied by the model's writer, whatever came of it.
  absl::StatusOr<LearnOutcome> outcome =
      applier_.Apply(entry.sequence, entry.payload);
  MutexLock lock(&mutex_);
  applied_ = entry.sequence;
  if (applied_ == stored_at_start_) {
    // What an operator restarting servers one at a time waits for before
    // the next (bench/cluster_faults.sh does).
    spdlog::info(
        "event=cluster_caught_up model={} log_sequence={} seconds={:.3f}",
        applier_.model_name(), applied_,
        absl::ToDoubleSeconds(absl::Now() - started_));
  }
  outcomes_.emplace_back(entry.sequence, std::move(outcome));
  if (outcomes_.size() > kKeptOutcomes) outcomes_.pop_front();
  applied_changed_.SignalAll();
}

absl::StatusOr<LearnOutcome> LogFollower::ApplyAppended(const LogEntry& entry,
                                                        absl::Time deadline) {
  ApplyIfNext(entry);
  return WaitApplied(entry.sequence, deadline);
}

bool LogFollower::CompactedPast(std::uint64_t sequence) const {
  absl::StatusOr<std::uint64_t> first = log_.FirstSequence();
  return first.ok() && *first > sequence;
}

absl::StatusOr<LearnOutcome> LogFollower::WaitApplied(
    std::uint64_t sequence, absl::Time deadline) const {
  const absl::Time start = absl::Now();
  MutexLock lock(&mutex_);
  awaited_ = std::max(awaited_, sequence);
  while (applied_ < sequence) {
    if (fell_behind_) {
      return absl::UnavailableError(absl::StrCat(
          "model '", applier_.model_name(),
          "' fell behind its log here and is being hosted again; retry"));
    }
    if (stopped_) {
      return absl::UnavailableError(
          absl::StrCat("model '", applier_.model_name(),
                       "' is no longer served by this server; retry"));
    }
    if (!applied_changed_.WaitUntil(&mutex_, deadline) && applied_ < sequence) {
      return absl::DeadlineExceededError(
          absl::StrCat("log entry ", sequence, " not applied within ",
                       absl::FormatDuration(absl::Now() - start), " (applied ",
                       applied_, ")"));
    }
  }
  for (const auto& [applied, outcome] : outcomes_) {
    if (applied == sequence) return outcome;
  }
  return absl::NotFoundError(
      absl::StrCat("log entry ", sequence, " was applied too long ago"));
}

}  // namespace streamreg
