// The entries of a model's replicated log (server/cluster/log_entries.h):
// each kind decodes to what was encoded, a damaged entry is refused
// naming its sequence and what did not decode, and a batch's message id
// is the same for the same ids and differs otherwise.
#include "server/cluster/log_entries.h"

#include <string>
#include <vector>

#include "core/model/model_settings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/hosting_test_support.h"

namespace streamreg {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

ModelConfig TwoInputs() {
  ModelConfig config = SmallConfig();
  EXPECT_TRUE(CompleteAndValidate(&config).ok());
  return config;
}

TEST(LogEntriesTest, EachKindDecodesToWhatWasEncoded) {
  const ModelConfig config = TwoInputs();
  DecodedLogEntry entry;
  ModelIdentity identity{.name = "arm",
                         .create_time = absl::FromUnixSeconds(1000),
                         .config = config};
  ASSERT_TRUE(
      DecodeLogEntry(EncodeCreateEntry(identity), 1, config, &entry).ok());
  EXPECT_EQ(entry.kind, LogEntryKind::kCreate);
  EXPECT_EQ(entry.identity.name, "arm");
  EXPECT_EQ(entry.identity.create_time, identity.create_time);

  const Batch batch(2, 7);
  ASSERT_TRUE(
      DecodeLogEntry(EncodeSamplesEntry(batch.samples), 2, config, &entry)
          .ok());
  EXPECT_EQ(entry.kind, LogEntryKind::kSamples);
  EXPECT_EQ(entry.samples.ids, (std::vector<std::uint64_t>{7, 8}));
  EXPECT_EQ(entry.samples.x, batch.x);
  ASSERT_TRUE(DecodeLogEntry(EncodeSamplesEntry(batch.samples,
                                                BatchTakeOvers::kAtFixedCounts),
                             3, config, &entry)
                  .ok());
  EXPECT_EQ(entry.kind, LogEntryKind::kSamplesAtFixedCounts);

  ASSERT_TRUE(DecodeLogEntry(EncodeRefitEntry(), 4, config, &entry).ok());
  EXPECT_EQ(entry.kind, LogEntryKind::kRefit);

  const TakeOverKey key{.work = TakeOverKey::Work::kMlkrFit, .earliest = 12};
  ASSERT_TRUE(DecodeLogEntry(EncodeTakeOverEntry(key), 5, config, &entry).ok());
  EXPECT_EQ(entry.kind, LogEntryKind::kTakeOver);
  EXPECT_EQ(entry.take_over, key);
}

TEST(LogEntriesTest, ADamagedEntryNamesItsSequenceAndWhatDidNotDecode) {
  const ModelConfig config = TwoInputs();
  DecodedLogEntry entry;
  EXPECT_EQ(DecodeLogEntry("", 9, config, &entry).message(),
            "log entry 9: empty");
  EXPECT_EQ(DecodeLogEntry("\x07", 9, config, &entry).message(),
            "log entry 9: unknown kind 7");
  const std::string samples = EncodeSamplesEntry(Batch(2, 1).samples);
  // One double short: the rows do not fit the model's dimensions.
  const absl::Status cut =
      DecodeLogEntry(samples.substr(0, samples.size() - 8), 10, config, &entry);
  EXPECT_EQ(cut.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(cut.message()),
              StartsWith("log entry 10: malformed samples: samples record: 2 "
                         "samples of 2 inputs and 1 targets at byte 20"));
  // A create entry whose configuration is of a later version.
  ModelIdentity identity{
      .name = "arm", .create_time = absl::UnixEpoch(), .config = config};
  std::string create = EncodeCreateEntry(identity);
  create[1 + 8 + 8 + 3 + 8] = 99;  // kind, lsn, name, create time: version
  EXPECT_THAT(std::string(DecodeLogEntry(create, 1, config, &entry).message()),
              HasSubstr("malformed create: model config: version at byte 27"));
}

TEST(LogEntriesTest, ABatchsMessageIdIsItsIdsOrUniqueWithoutThem) {
  const std::string id = BatchMessageId("arm", Batch(2, 1).samples, "u1");
  EXPECT_EQ(BatchMessageId("arm", Batch(2, 1).samples, "u2"), id);  // retry
  EXPECT_NE(BatchMessageId("arm", Batch(2, 2).samples, "u1"), id);
  EXPECT_NE(BatchMessageId("other", Batch(2, 1).samples, "u1"), id);
  EXPECT_THAT(id, StartsWith("arm/s/"));
  // Samples without ids: the batch is its own message.
  EXPECT_EQ(BatchMessageId("arm", Batch(2, 0).samples, "u1"), "arm/u/u1");
}

}  // namespace
}  // namespace streamreg
