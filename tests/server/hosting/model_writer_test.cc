// The one place a hosted model's writes change it (ModelWriter): what a
// batch's sequencing lets through to the journal (read back from its
// files), what it leaves unchanged when the journal refuses the batch (a
// full disk), and what a snapshot captures — checked against the samples
// sent, counted by hand.
#include "server/hosting/model_writer.h"

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/hosting/learn_stage.h"
#include "server/hosting/worker_pool.h"
#include "server/storage/journal_file.h"
#include "tests/support/fault_injecting_file_system.h"
#include "tests/support/fresh_directory.h"

namespace streamreg {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Samples with the given ids, x = (id, id / 2), y = sin(id).
struct Batch {
  std::vector<double> x, y;
  std::vector<Sample> samples;
  explicit Batch(std::vector<std::uint64_t> ids)
      : x(2 * ids.size()), y(ids.size()) {
    for (std::size_t i = 0; i < ids.size(); ++i) {
      x[2 * i] = static_cast<double>(ids[i]);
      x[2 * i + 1] = x[2 * i] / 2;
      y[i] = std::sin(x[2 * i]);
    }
    for (std::size_t i = 0; i < ids.size(); ++i) {
      samples.push_back(Sample{{&x[2 * i], 2}, {&y[i], 1}, ids[i]});
    }
  }
};

// A samples record of the journal, read back.
struct Recorded {
  std::uint64_t first_sequence = 0;
  std::vector<std::uint64_t> ids;
};

class ModelWriterTest : public ::testing::Test {
 protected:
  void SetUp() override { MakeWriter({.max_samples = 0, .dedup_window = 8}); }
  // Learning done before the stage and the model go.
  void TearDown() override { pool_.Drain(); }

  void MakeWriter(ModelWriter::Limits limits) {
    pool_.Drain();
    writer_.reset();
    stage_.reset();
    ModelConfig config;
    config.input_dim = 2;
    config.target_names = {"y"};
    model_ = *Model::Create(config);
    stage_ = std::make_shared<LearnStage>(model_.get(), &pool_);
    writer_ = std::make_unique<ModelWriter>(
        "m", model_.get(), stage_.get(), limits,
        [] { return std::shared_ptr<const void>(); });
    directory_ = FreshDirectory();
    JournalFile::Options options;
    options.file_system = &disk_;
    journal_ = *JournalFile::Create(directory_, options,
                                    {"m", absl::Now(), config, {"a", "b"}});
  }

  // Applies the samples of `ids`, all announced, recording them in the
  // journal.
  absl::StatusOr<LearnOutcome> Apply(const std::vector<std::uint64_t>& ids) {
    const Batch batch(ids);
    absl::StatusOr<ValidatedSamples> validated =
        model_->Validate(batch.samples);
    EXPECT_TRUE(validated.ok()) << validated.status();
    // Settles, when Apply returns, what the write did not take over.
    WriteTicket ticket(stage_, AdmissionTicket(), ids.size());
    return writer_->ApplySamples(*validated,
                                 {.record = {.journal = journal_.get()},
                                  .ticket = &ticket,
                                  .max_unlearned = 1024});
  }

  // The journal's records of `type`, read back from its files.
  std::vector<JournalFile::LogEntry> Records(RecordType type) {
    contents_ = *JournalFile::Recover(directory_, &disk_);
    std::vector<JournalFile::LogEntry> records;
    for (const JournalFile::LogEntry& entry : contents_.entries) {
      if (entry.type == type) records.push_back(entry);
    }
    return records;
  }
  // Its samples records.
  std::vector<Recorded> SamplesRecords() {
    std::vector<Recorded> recorded;
    for (const JournalFile::LogEntry& entry : Records(kSamplesRecord)) {
      SamplesRecord record;
      EXPECT_TRUE(DecodeSamples(entry.payload, 2, 1, &record).ok());
      recorded.push_back({record.first_sequence, record.ids});
    }
    return recorded;
  }

  WorkerPool pool_{1};
  std::unique_ptr<Model> model_;
  std::shared_ptr<LearnStage> stage_;
  std::unique_ptr<ModelWriter> writer_;
  FaultInjectingFileSystem disk_;
  std::string directory_;
  std::unique_ptr<JournalFile> journal_;
  JournalFile::Contents contents_;  // what Records read
};

TEST_F(ModelWriterTest, RecordsOnlyTheFreshSamplesNumberedOnFromTheModel) {
  ASSERT_TRUE(Apply({1, 2, 3}).ok());
  absl::StatusOr<LearnOutcome> outcome = Apply({2, 3, 4, 5});
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->accepted, 2u);
  EXPECT_EQ(outcome->duplicates, 2u);
  EXPECT_EQ(outcome->num_samples, 5u);
  EXPECT_THAT(outcome->sequence, ElementsAre(2, 3, 4, 5));
  EXPECT_THAT(outcome->duplicate, ElementsAre(true, true, false, false));
  const std::vector<Recorded> recorded = SamplesRecords();
  ASSERT_EQ(recorded.size(), 2u);
  EXPECT_EQ(recorded[0].first_sequence, 1u);
  EXPECT_THAT(recorded[0].ids, ElementsAre(1, 2, 3));
  EXPECT_EQ(recorded[1].first_sequence, 4u);
  EXPECT_THAT(recorded[1].ids, ElementsAre(4, 5));
  // A batch of duplicates only is not recorded at all.
  ASSERT_TRUE(Apply({4, 5}).ok());
  EXPECT_EQ(SamplesRecords().size(), 2u);
  stage_->CatchUp();
  EXPECT_EQ(model_->samples_seen(), 5u);
  EXPECT_EQ(stage_->Unlearned(5), 0u);  // every announced sample settled
  EXPECT_EQ(writer_->samples_logged(), 5u);
  EXPECT_EQ(writer_->duplicate_samples(), 4u);
}

TEST_F(ModelWriterTest, ABatchTheJournalRefusesChangesNothing) {
  ASSERT_TRUE(Apply({1, 2}).ok());
  disk_.append_error = ENOSPC;
  const absl::StatusOr<LearnOutcome> refused = Apply({3, 4});
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(writer_->samples_logged(), 2u);
  // Room again: the same samples are fresh, and numbered where they would
  // have been.
  disk_.append_error = 0;
  ASSERT_TRUE(Apply({3, 4}).ok());
  const std::vector<Recorded> recorded = SamplesRecords();
  ASSERT_EQ(recorded.size(), 2u);
  EXPECT_EQ(recorded.back().first_sequence, 3u);
  EXPECT_THAT(recorded.back().ids, ElementsAre(3, 4));
  stage_->CatchUp();
  EXPECT_EQ(model_->samples_seen(), 4u);
  EXPECT_EQ(stage_->Unlearned(4), 0u);
}

TEST_F(ModelWriterTest, TheSampleLimitCountsOnlyFreshSamplesAndRecordsNothing) {
  MakeWriter({.max_samples = 3, .dedup_window = 8});
  ASSERT_TRUE(Apply({1, 2}).ok());
  // Two duplicates and one new sample fit; two new ones do not.
  ASSERT_TRUE(Apply({1, 2, 3}).ok());
  const absl::StatusOr<LearnOutcome> refused = Apply({4});
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.status().message(), HasSubstr("--max-samples-per-model"));
  EXPECT_EQ(SamplesRecords().size(), 2u);
  EXPECT_EQ(writer_->samples_logged(), 3u);
  stage_->CatchUp();
  EXPECT_EQ(stage_->Unlearned(3), 0u);
}

TEST_F(ModelWriterTest, ADeletedModelRefusesWritesAndRecordsNoMore) {
  ASSERT_TRUE(Apply({1}).ok());
  ASSERT_TRUE(writer_->Delete(journal_.get()).ok());
  EXPECT_TRUE(writer_->deleted());
  EXPECT_EQ(Apply({2}).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(writer_->Delete(journal_.get()).code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(Records(kDeleteRecord).size(), 1u);
  EXPECT_EQ(SamplesRecords().size(), 1u);
}

TEST_F(ModelWriterTest, ACaptureHoldsEverySampleAppliedAndTheRecentIds) {
  ASSERT_TRUE(Apply({7, 8, 9}).ok());
  ASSERT_TRUE(Apply({8, 10}).ok());
  writer_->NoteApplied(12);
  absl::StatusOr<std::optional<ModelWriter::Captured>> captured =
      writer_->Capture(/*journal=*/nullptr);
  ASSERT_TRUE(captured.ok()) << captured.status();
  ASSERT_TRUE(captured->has_value());
  const SnapshotHeader& header = (*captured)->header;
  EXPECT_EQ(header.lsn, 12u);
  EXPECT_EQ(header.num_samples, 4u);
  EXPECT_EQ(header.duplicate_samples, 1u);
  using Entry = std::pair<std::uint64_t, std::uint64_t>;
  EXPECT_THAT(header.recent_ids,
              ElementsAre(Entry{7, 1}, Entry{8, 2}, Entry{9, 3}, Entry{10, 4}));
  // The capture waited for learning: the model holds all four.
  EXPECT_EQ(model_->samples_seen(), 4u);
  // As of the journal: at its position, until a snapshot is there.
  absl::StatusOr<std::optional<ModelWriter::Captured>> at_journal =
      writer_->Capture(journal_.get());
  ASSERT_TRUE(at_journal.ok()) << at_journal.status();
  ASSERT_TRUE(at_journal->has_value());
  EXPECT_EQ((*at_journal)->header.lsn, journal_->position().lsn);
  EXPECT_EQ((*at_journal)->journal_position.segment,
            journal_->position().segment);
  EXPECT_EQ((*at_journal)->header.num_samples, 4u);
  ASSERT_TRUE(journal_
                  ->WriteSnapshot((*at_journal)->journal_position,
                                  [](RecordWriter&, std::uint64_t*) {
                                    return absl::OkStatus();
                                  })
                  .ok());
  // Nothing to capture: none.
  absl::StatusOr<std::optional<ModelWriter::Captured>> none =
      writer_->Capture(journal_.get());
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());

  // Restored into a fresh writer, the window still knows the ids.
  MakeWriter({.max_samples = 0, .dedup_window = 8});
  writer_->Restore(header);
  EXPECT_EQ(writer_->log_applied(), 12u);
  const absl::StatusOr<LearnOutcome> again = Apply({9, 11});
  ASSERT_TRUE(again.ok());
  EXPECT_THAT(again->sequence, ElementsAre(3, 5));
  EXPECT_THAT(again->duplicate, ElementsAre(true, false));
}

}  // namespace
}  // namespace streamreg
