#include "server/cluster/log_follower.h"

#include <chrono>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/base/byte_coding.h"
#include "server/cluster/log_entries.h"

namespace streamreg {
namespace {

// How long the follower waits for an entry before it looks whether it was
// asked to stop, and how long it pauses after the cluster could not
// deliver.
constexpr absl::Duration kPoll = absl::Milliseconds(100);

// The configuration's exact encoding, to compare two of them.
std::string ConfigBytes(const ModelConfig& config) {
  std::string bytes;
  ByteWriter writer(&bytes);
  SaveConfig(config, writer);
  return bytes;
}

}  // namespace

absl::StatusOr<std::unique_ptr<LogFollower>> LogFollower::Start(
    const ModelLog& log, std::shared_ptr<HostedModel> model,
    std::uint64_t from) {
  from = std::max<std::uint64_t>(from, 1);
  absl::StatusOr<ModelLog::Cursor> cursor = log.Follow(from);
  if (!cursor.ok()) return cursor.status();
  std::unique_ptr<LogFollower> follower(
      new LogFollower(*std::move(cursor), std::move(model), from));
  LogFollower* self = follower.get();
  follower->thread_ =
      std::jthread([self](std::stop_token stop) { self->Run(stop); });
  return follower;
}

LogFollower::LogFollower(ModelLog::Cursor cursor,
                         std::shared_ptr<HostedModel> model, std::uint64_t from)
    : cursor_(std::move(cursor)),
      model_(std::move(model)),
      applied_(from - 1) {}

LogFollower::~LogFollower() {
  thread_.request_stop();
  if (thread_.joinable()) thread_.join();
}

std::uint64_t LogFollower::applied() const {
  MutexLock lock(&mutex_);
  return applied_;
}

void LogFollower::Run(std::stop_token stop) {
  while (!stop.stop_requested()) {
    absl::StatusOr<LogEntry> entry = cursor_.Next(kPoll);
    if (!entry.ok()) {
      // Nothing new, or the cluster cannot deliver now (the ordered
      // consumer resumes where it left off).
      if (!absl::IsDeadlineExceeded(entry.status())) absl::SleepFor(kPoll);
      continue;
    }
    std::uint64_t expected = 0;
    {
      MutexLock lock(&mutex_);
      expected = applied_ + 1;
    }
    // The ordered consumer delivers each entry once, in order; anything
    // else is not this log.
    absl::StatusOr<LearnOutcome> outcome =
        entry->sequence == expected
            ? Apply(*entry)
            : absl::DataLossError(absl::StrCat("log entry ", entry->sequence,
                                               " came where ", expected,
                                               " was due"));
    MutexLock lock(&mutex_);
    applied_ = entry->sequence;
    outcomes_.emplace_back(entry->sequence, std::move(outcome));
    if (outcomes_.size() > kKeptOutcomes) outcomes_.pop_front();
    applied_changed_.SignalAll();
  }
}

absl::StatusOr<LearnOutcome> LogFollower::Apply(const LogEntry& entry) {
  const ModelConfig& config = model_->model().config();
  DecodedLogEntry decoded;
  if (absl::Status status =
          DecodeLogEntry(entry.payload, entry.sequence, config, &decoded);
      !status.ok()) {
    return status;
  }
  switch (decoded.kind) {
    case LogEntryKind::kCreate:
      // Compared as models are made (defaults filled in).
      if (decoded.identity.name != model_->name() ||
          !CompleteAndValidate(&decoded.identity.config).ok() ||
          ConfigBytes(decoded.identity.config) != ConfigBytes(config)) {
        return absl::DataLossError(
            absl::StrCat("log entry ", entry.sequence, " creates model '",
                         decoded.identity.name, "' otherwise than '",
                         model_->name(), "' was made"));
      }
      return LearnOutcome{};
    case LogEntryKind::kSamples: {
      const std::vector<Sample> samples =
          decoded.samples.samples(config.input_dim, config.num_targets());
      return model_->ApplyFromLog(samples);
    }
    case LogEntryKind::kRefit:
      if (absl::Status status = model_->ApplyRefitFromLog(); !status.ok()) {
        return status;
      }
      return LearnOutcome{};
  }
  return absl::InternalError("unreachable");
}

absl::StatusOr<LearnOutcome> LogFollower::WaitApplied(
    std::uint64_t sequence, absl::Duration timeout) const {
  const auto deadline =
      std::chrono::steady_clock::now() + absl::ToChronoNanoseconds(timeout);
  MutexLock lock(&mutex_);
  while (applied_ < sequence) {
    if (!applied_changed_.WaitUntil(&mutex_, deadline) && applied_ < sequence) {
      return absl::DeadlineExceededError(absl::StrCat(
          "log entry ", sequence, " not applied within ",
          absl::FormatDuration(timeout), " (applied ", applied_, ")"));
    }
  }
  for (const auto& [applied, outcome] : outcomes_) {
    if (applied == sequence) return outcome;
  }
  return absl::NotFoundError(
      absl::StrCat("log entry ", sequence, " was applied too long ago"));
}

}  // namespace streamreg
