// A single server's write log: the fresh samples of a write reach the
// model's journal numbered as the model learns them (duplicates do not); a
// write the disk refuses changes nothing and may be sent again; a deletion
// is recorded and refuses later writes; a model in memory only writes no
// record at all.
#include "server/hosting/journal_log.h"

#include <cerrno>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "server/hosting/learn_stage.h"
#include "server/hosting/model_writer.h"
#include "server/hosting/worker_pool.h"
#include "server/storage/journal_file.h"
#include "server/storage/journal_records.h"
#include "tests/support/fault_injecting_file_system.h"
#include "tests/support/fresh_directory.h"
#include "tests/support/hosting_test_support.h"

namespace streamreg {
namespace {

class JournalLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = *Model::Create(SmallConfig());
    stage_ = std::make_unique<LearnStage>(model_.get(), &pool_);
    writer_ = std::make_unique<ModelWriter>(
        "m", model_.get(), stage_.get(),
        ModelWriter::Limits{.max_samples = 0, .dedup_window = 100},
        [] { return std::shared_ptr<const void>(); });
  }
  void TearDown() override { pool_.Drain(); }

  // A log over a journal made in a fresh directory (null: in memory only).
  std::unique_ptr<JournalLog> MakeLog(bool on_disk = true) {
    std::unique_ptr<JournalFile> journal;
    if (on_disk) {
      directory_ = FreshDirectory() + "/m";
      JournalFile::Options options;
      options.file_system = &file_system_;
      absl::StatusOr<std::unique_ptr<JournalFile>> made = JournalFile::Create(
          directory_, options,
          {"m", absl::FromUnixSeconds(1), SmallConfig(), {}});
      EXPECT_TRUE(made.ok()) << made.status();
      if (made.ok()) journal = *std::move(made);
    }
    return std::make_unique<JournalLog>(std::move(journal), writer_.get(),
                                        JournalLog::Backlog{1000, 1000});
  }

  absl::StatusOr<LearnOutcome> Append(JournalLog& log, const Batch& batch) {
    absl::StatusOr<ValidatedSamples> valid = model_->Validate(batch.samples);
    EXPECT_TRUE(valid.ok()) << valid.status();
    return log.AppendSamples(*valid, {});
  }

  // The records after the create record, as the journal holds them.
  std::vector<JournalFile::LogEntry> Records() {
    contents_ = JournalFile::Recover(directory_, &file_system_);
    EXPECT_TRUE(contents_.ok()) << contents_.status();
    if (!contents_.ok()) return {};
    std::vector<JournalFile::LogEntry> records;
    for (const JournalFile::LogEntry& entry : contents_->entries) {
      if (entry.type != kCreateRecord) records.push_back(entry);
    }
    return records;
  }
  SamplesRecord Decoded(const JournalFile::LogEntry& entry) {
    SamplesRecord record;
    EXPECT_EQ(entry.type, kSamplesRecord);
    EXPECT_TRUE(DecodeSamples(entry.payload, 2, 1, &record).ok());
    return record;
  }

  FaultInjectingFileSystem file_system_;
  WorkerPool pool_{1};
  std::unique_ptr<Model> model_;
  std::unique_ptr<LearnStage> stage_;
  std::unique_ptr<ModelWriter> writer_;
  std::string directory_;
  absl::StatusOr<JournalFile::Contents> contents_;
};

TEST_F(JournalLogTest, OnlyTheFreshSamplesAreRecordedWithTheirNumbers) {
  std::unique_ptr<JournalLog> log = MakeLog();
  absl::StatusOr<LearnOutcome> first = Append(*log, Batch(3, 1));  // 1-3
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->accepted, 3u);
  absl::StatusOr<LearnOutcome> second = Append(*log, Batch(2, 3));  // 3, 4
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->accepted, 1u);
  EXPECT_EQ(second->duplicates, 1u);
  const std::vector<JournalFile::LogEntry> records = Records();
  ASSERT_EQ(records.size(), 2u);
  const SamplesRecord a = Decoded(records[0]), b = Decoded(records[1]);
  EXPECT_EQ(a.ids, (std::vector<std::uint64_t>{1, 2, 3}));
  EXPECT_EQ(b.ids, (std::vector<std::uint64_t>{4}));
  EXPECT_EQ(b.first_sequence, a.first_sequence + 3);
  // A batch of duplicates alone records nothing.
  ASSERT_TRUE(Append(*log, Batch(2, 1)).ok());
  EXPECT_EQ(Records().size(), 2u);
  stage_->CatchUp();
  EXPECT_EQ(model_->samples_seen(), 4u);
}

TEST_F(JournalLogTest, AWriteTheDiskRefusesChangesNothing) {
  std::unique_ptr<JournalLog> log = MakeLog();
  file_system_.append_error = ENOSPC;
  absl::StatusOr<LearnOutcome> refused = Append(*log, Batch(2, 10));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted)
      << refused.status();
  stage_->CatchUp();
  EXPECT_EQ(model_->samples_seen(), 0u);
  // Sent again once there is room: learned, not taken for duplicates.
  file_system_.append_error = 0;
  absl::StatusOr<LearnOutcome> again = Append(*log, Batch(2, 10));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->accepted, 2u);
  ASSERT_EQ(Records().size(), 1u);
  EXPECT_EQ(Decoded(Records()[0]).ids, (std::vector<std::uint64_t>{10, 11}));
}

TEST_F(JournalLogTest, ADeletionIsRecordedAndRefusesLaterWrites) {
  std::unique_ptr<JournalLog> log = MakeLog();
  ASSERT_TRUE(Append(*log, Batch(2, 1)).ok());
  ASSERT_TRUE(log->AppendDelete().ok());
  const std::vector<JournalFile::LogEntry> records = Records();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[1].type, kDeleteRecord);
  EXPECT_FALSE(Append(*log, Batch(2, 5)).ok());
  EXPECT_EQ(Records().size(), 2u);
}

TEST_F(JournalLogTest, InMemoryAWriteIsAppliedWithoutARecord) {
  std::unique_ptr<JournalLog> log = MakeLog(/*on_disk=*/false);
  EXPECT_EQ(log->journal(), nullptr);
  absl::StatusOr<LearnOutcome> outcome = Append(*log, Batch(3, 1));
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->accepted, 3u);
  stage_->CatchUp();
  EXPECT_EQ(model_->samples_seen(), 3u);
}

}  // namespace
}  // namespace streamreg
