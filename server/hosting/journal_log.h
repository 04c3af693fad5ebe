#ifndef STREAMREG_SERVER_HOSTING_JOURNAL_LOG_H_
#define STREAMREG_SERVER_HOSTING_JOURNAL_LOG_H_

#include <cstddef>
#include <functional>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/hosting/model_writer.h"
#include "server/hosting/write_log.h"
#include "server/storage/journal_file.h"

namespace streamreg {

// A single server's WriteLog: the model's journal on its disk (none: the
// model lives in memory only). A write is applied on the caller's thread
// by the model's ModelWriter, which sequences it first — so the journal
// records only the fresh samples, numbered, and recovery replays them
// whatever the server's flags are then — and queues them for learning
// once the journal has them (fsynced under --sync=always).
class JournalLog : public WriteLog {
 public:
  // Streamed samples wait for learning past this many unlearned, Ingest
  // batches past that many (HostedModel::kMaxUnlearnedStreamed,
  // kMaxUnlearned).
  struct Backlog {
    std::size_t streamed = 0;
    std::size_t batches = 0;
  };
  // `writer` must outlive the log.
  JournalLog(std::unique_ptr<JournalFile> journal, ModelWriter* writer,
             Backlog backlog)
      : journal_(std::move(journal)), writer_(writer), backlog_(backlog) {}

  absl::StatusOr<LearnOutcome> AppendSamples(
      const ValidatedSamples& batch, const WriteOptions& options) override;
  absl::Status AppendRefit(
      const std::function<void(std::size_t, std::size_t)>& progress,
      absl::Time deadline) override;
  absl::Status AppendTakeOver(const TakeOverKey& key) override;
  // Records the deletion (fsynced) and has the writer refuse what follows.
  absl::Status AppendDelete();

  // Null: in memory only. The journal synchronizes itself.
  JournalFile* journal() const { return journal_.get(); }

 private:
  const std::unique_ptr<JournalFile> journal_;
  ModelWriter* const writer_;
  const Backlog backlog_;
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_HOSTING_JOURNAL_LOG_H_
