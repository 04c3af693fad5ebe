// A model's files in the data directory (server/storage/journal_file.h),
// read back as recovery reads them: every record in order with its lsn,
// segments rolled past their size, a journal that goes on after recovery
// in a new segment, a torn tail cut and damage before it refused naming
// the file and offset, fsyncs where the policy says (and a deferred one
// only when asked), a full disk that undoes the record and a failed fsync
// that fails every later append.
#include "server/storage/journal_file.h"

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/fault_injecting_file_system.h"
#include "tests/support/fresh_directory.h"
#include "tests/support/hosting_test_support.h"

namespace streamreg {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class JournalFileTest : public ::testing::Test {
 protected:
  void SetUp() override { config_ = SmallConfig(); }

  std::unique_ptr<JournalFile> Create(JournalFile::Options options = {}) {
    directory_ = FreshDirectory() + "/m";
    options.file_system = &disk_;
    absl::StatusOr<std::unique_ptr<JournalFile>> journal = JournalFile::Create(
        directory_, options, {"m", absl::FromUnixSeconds(9), config_, {}});
    EXPECT_TRUE(journal.ok()) << journal.status();
    return journal.ok() ? *std::move(journal) : nullptr;
  }
  absl::StatusOr<JournalFile::Contents> Recover() {
    return JournalFile::Recover(directory_, &disk_);
  }
  std::vector<RecordType> Types(const JournalFile::Contents& contents) {
    std::vector<RecordType> types;
    for (const JournalFile::LogEntry& entry : contents.entries) {
      types.push_back(entry.type);
    }
    return types;
  }
  std::string SegmentPath(std::uint64_t segment) const {
    return absl::StrFormat("%s/wal-%020d.log", directory_, segment);
  }

  ModelConfig config_;
  FaultInjectingFileSystem disk_;
  std::string directory_;
};

TEST_F(JournalFileTest, EveryRecordIsReadBackInOrderWithItsLsn) {
  std::unique_ptr<JournalFile> journal = Create();
  ASSERT_NE(journal, nullptr);
  const Batch first(3, 100), second(2, 200);
  ASSERT_TRUE(journal->AppendSamples(1, first.samples).ok());
  ASSERT_TRUE(journal->AppendRefit().ok());
  const TakeOverKey key{.work = TakeOverKey::Work::kMlkrFit, .earliest = 3};
  ASSERT_TRUE(journal->AppendTakeOver(key).ok());
  ASSERT_TRUE(
      journal->AppendSamples(4, second.samples, BatchTakeOvers::kAtFixedCounts)
          .ok());
  ASSERT_TRUE(journal->AppendDelete().ok());
  EXPECT_EQ(journal->position().lsn, 6u);
  journal.reset();

  absl::StatusOr<JournalFile::Contents> contents = Recover();
  ASSERT_TRUE(contents.ok()) << contents.status();
  EXPECT_FALSE(contents->has_snapshot);
  EXPECT_THAT(
      Types(*contents),
      ElementsAre(kCreateRecord, kSamplesRecord, kRefitRecord, kTakeOverRecord,
                  kSamplesAtFixedCountsRecord, kDeleteRecord));
  for (std::size_t e = 0; e < contents->entries.size(); ++e) {
    EXPECT_EQ(contents->entries[e].lsn, e + 1);
  }
  EXPECT_EQ(contents->last_lsn, 6u);
  ModelIdentity identity;
  ASSERT_TRUE(DecodeCreate(contents->entries[0].payload, &identity).ok());
  EXPECT_EQ(identity.name, "m");
  EXPECT_EQ(identity.create_time, absl::FromUnixSeconds(9));
  SamplesRecord samples;
  ASSERT_TRUE(DecodeSamples(contents->entries[4].payload, 2, 1, &samples).ok());
  EXPECT_EQ(samples.first_sequence, 4u);
  EXPECT_EQ(samples.ids, (std::vector<std::uint64_t>{200, 201}));
  EXPECT_EQ(samples.x, second.x);
  EXPECT_EQ(samples.y, second.y);
  TakeOverKey read_key;
  ASSERT_TRUE(DecodeTakeOver(contents->entries[3].payload, &read_key).ok());
  EXPECT_EQ(read_key, key);
}

TEST_F(JournalFileTest, SegmentsRollAndAJournalGoesOnInANewOne) {
  std::unique_ptr<JournalFile> journal =
      Create({.sync = {}, .segment_bytes = 512});
  ASSERT_NE(journal, nullptr);
  for (std::uint64_t b = 0; b < 20; ++b) {
    const Batch batch(4, 1000 + 10 * b);
    ASSERT_TRUE(journal->AppendSamples(1 + 4 * b, batch.samples).ok());
  }
  journal.reset();
  absl::StatusOr<JournalFile::Contents> contents = Recover();
  ASSERT_TRUE(contents.ok()) << contents.status();
  ASSERT_GT(contents->segments.size(), 2u);
  EXPECT_TRUE(
      std::is_sorted(contents->segments.begin(), contents->segments.end()));
  EXPECT_EQ(contents->entries.size(), 21u);
  EXPECT_EQ(contents->last_lsn, 21u);

  absl::StatusOr<std::unique_ptr<JournalFile>> going_on = JournalFile::Continue(
      directory_, {.file_system = &disk_, .sync = {}}, *contents);
  ASSERT_TRUE(going_on.ok()) << going_on.status();
  const Batch more(2, 5000);
  ASSERT_TRUE((*going_on)->AppendSamples(81, more.samples).ok());
  EXPECT_EQ((*going_on)->position().lsn, 22u);
  EXPECT_GT((*going_on)->position().segment, contents->segments.back());
  going_on->reset();
  absl::StatusOr<JournalFile::Contents> again = Recover();
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->segments.size(), contents->segments.size() + 1);
  EXPECT_EQ(again->entries.back().lsn, 22u);
}

TEST_F(JournalFileTest, ATornTailIsCutAndDamageBeforeItIsRefused) {
  std::unique_ptr<JournalFile> journal = Create();
  ASSERT_NE(journal, nullptr);
  for (std::uint64_t b = 0; b < 3; ++b) {
    const Batch batch(5, 100 + 10 * b);
    ASSERT_TRUE(journal->AppendSamples(1 + 5 * b, batch.samples).ok());
  }
  const std::uint64_t segment = journal->position().segment;
  journal.reset();
  const std::string path = SegmentPath(segment);
  ASSERT_TRUE(std::filesystem::exists(path)) << path;
  const std::uintmax_t size = std::filesystem::file_size(path);

  // The last record half written (a crash mid-append): cut off.
  std::filesystem::resize_file(path, size - 7);
  absl::StatusOr<JournalFile::Contents> torn = Recover();
  ASSERT_TRUE(torn.ok()) << torn.status();
  EXPECT_EQ(torn->last_lsn, 3u);
  // Cut back to the end of the last whole record.
  EXPECT_LT(std::filesystem::file_size(path), size - 7);

  // A byte changed in the middle of the segment: that record is damaged,
  // and records follow it.
  {
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(
        static_cast<std::streamoff>(std::filesystem::file_size(path) / 2));
    file.put('\x5a');
  }
  absl::StatusOr<JournalFile::Contents> damaged = Recover();
  EXPECT_EQ(damaged.status().code(), absl::StatusCode::kDataLoss)
      << damaged.status();
  EXPECT_THAT(damaged.status().message(),
              HasSubstr(std::filesystem::path(path).filename().string()));
  EXPECT_THAT(damaged.status().message(), HasSubstr("offset"));
}

TEST_F(JournalFileTest, FsyncsWhereThePolicySaysAndADeferredOneWhenAsked) {
  std::unique_ptr<JournalFile> journal = Create({.sync = {}});  // always
  ASSERT_NE(journal, nullptr);
  const Batch batch(2, 100);
  int syncs = disk_.file_syncs.load();
  ASSERT_TRUE(journal->AppendSamples(1, batch.samples).ok());
  EXPECT_EQ(disk_.file_syncs.load(), syncs + 1);
  syncs = disk_.file_syncs.load();
  // Made durable by the samples after it.
  ASSERT_TRUE(
      journal
          ->AppendTakeOver({.work = TakeOverKey::Work::kMlkrFit, .earliest = 3})
          .ok());
  EXPECT_EQ(disk_.file_syncs.load(), syncs);
  // Deferred: fsynced once asked, and only once.
  ASSERT_TRUE(journal
                  ->AppendSamples(3, Batch(1, 300).samples,
                                  BatchTakeOvers::kWhereRecorded,
                                  /*defer_sync=*/true)
                  .ok());
  EXPECT_EQ(disk_.file_syncs.load(), syncs);
  ASSERT_TRUE(journal->SyncIfDirty().ok());
  EXPECT_EQ(disk_.file_syncs.load(), syncs + 1);
  ASSERT_TRUE(journal->SyncIfDirty().ok());
  EXPECT_EQ(disk_.file_syncs.load(), syncs + 1);

  // Under an interval policy appends are not fsynced; a deletion is.
  std::unique_ptr<JournalFile> lazy =
      Create({.sync = *SyncPolicy::Parse("interval:1")});
  ASSERT_NE(lazy, nullptr);
  syncs = disk_.file_syncs.load();
  ASSERT_TRUE(lazy->AppendSamples(1, batch.samples).ok());
  EXPECT_EQ(disk_.file_syncs.load(), syncs);
  ASSERT_TRUE(lazy->AppendDelete().ok());
  EXPECT_GT(disk_.file_syncs.load(), syncs);
}

TEST_F(JournalFileTest, AFullDiskUndoesTheRecordAndAFailedFsyncFailsTheLog) {
  std::unique_ptr<JournalFile> journal = Create();
  ASSERT_NE(journal, nullptr);
  ASSERT_TRUE(journal->AppendSamples(1, Batch(2, 100).samples).ok());
  disk_.append_error = ENOSPC;
  const absl::Status full = journal->AppendSamples(3, Batch(2, 200).samples);
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted) << full;
  EXPECT_THAT(full.message(), HasSubstr("wal-"));
  disk_.append_error = 0;
  ASSERT_TRUE(journal->AppendSamples(3, Batch(2, 300).samples).ok());
  EXPECT_TRUE(journal->failure().ok());

  disk_.sync_error = EIO;
  const absl::Status failed = journal->AppendSamples(5, Batch(1, 400).samples);
  EXPECT_EQ(failed.code(), absl::StatusCode::kUnavailable) << failed;
  disk_.sync_error = 0;
  EXPECT_FALSE(journal->failure().ok());
  EXPECT_EQ(journal->AppendSamples(6, Batch(1, 500).samples).code(),
            absl::StatusCode::kUnavailable);
  journal.reset();

  // What was read back: the first batch and the one after the full disk,
  // each once, the half-written record of the full disk undone.
  absl::StatusOr<JournalFile::Contents> contents = Recover();
  ASSERT_TRUE(contents.ok()) << contents.status();
  ASSERT_GE(contents->entries.size(), 3u);
  std::vector<std::uint64_t> first_ids;
  for (std::size_t e = 1; e < 3; ++e) {
    SamplesRecord samples;
    ASSERT_TRUE(
        DecodeSamples(contents->entries[e].payload, 2, 1, &samples).ok());
    first_ids.push_back(samples.ids.front());
  }
  EXPECT_THAT(first_ids, ElementsAre(100, 300));
}

}  // namespace
}  // namespace streamreg
