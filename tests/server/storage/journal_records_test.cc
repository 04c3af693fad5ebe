// The record payloads of a model's log and snapshots
// (server/storage/journal_records.h): each decodes to what was encoded,
// and a damaged one is refused, naming what did not decode and where.
#include "server/storage/journal_records.h"

#include <cstring>
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

ModelIdentity Identity() {
  ModelIdentity identity;
  identity.name = "arm";
  identity.create_time = absl::FromUnixMicros(1'700'000'000'000'000);
  identity.config = SmallConfig();
  EXPECT_TRUE(CompleteAndValidate(&identity.config).ok());
  identity.input_names = {"q", "qd"};
  return identity;
}

std::string ConfigBytes(const ModelConfig& config) {
  std::string bytes;
  ByteWriter writer(&bytes);
  SaveConfig(config, writer);
  return bytes;
}

// Every prefix of `payload` is refused as DATA_LOSS naming `what`, and so
// is the payload with a byte after its end.
template <class Decode>
void ExpectEveryCutRefused(const std::string& payload, Decode decode) {
  for (std::size_t cut = 0; cut < payload.size(); ++cut) {
    const absl::Status status = decode(payload.substr(0, cut));
    EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << cut;
    EXPECT_THAT(std::string(status.message()), HasSubstr(" at byte ")) << cut;
  }
  const absl::Status longer = decode(payload + '\0');
  EXPECT_EQ(longer.code(), absl::StatusCode::kDataLoss);
}

TEST(JournalRecordsTest, ACreateRecordDecodesToTheIdentityItWasMadeOf) {
  const ModelIdentity identity = Identity();
  const std::string payload = EncodeCreate(7, identity);
  std::uint64_t lsn = 0;
  ASSERT_TRUE(DecodeLsn(payload, &lsn).ok());
  EXPECT_EQ(lsn, 7u);
  ModelIdentity read;
  ASSERT_TRUE(DecodeCreate(payload, &read).ok());
  EXPECT_EQ(read.name, identity.name);
  EXPECT_EQ(read.create_time, identity.create_time);
  EXPECT_EQ(ConfigBytes(read.config), ConfigBytes(identity.config));
  EXPECT_EQ(read.input_names, identity.input_names);
  ExpectEveryCutRefused(payload, [](const std::string& bytes) {
    ModelIdentity out;
    return DecodeCreate(bytes, &out);
  });
  EXPECT_THAT(std::string(DecodeCreate(payload + "x", &read).message()),
              StartsWith("create record: 1 bytes after its end"));
}

TEST(JournalRecordsTest, ADamagedConfigurationNamesItsSettingAndByte) {
  const ModelIdentity identity = Identity();
  std::string payload = EncodeCreate(1, identity);
  // lsn, then the name (a u64 length and 3 bytes), then the create time:
  // the configuration's version starts at byte 27.
  const std::size_t config_at = 8 + 8 + identity.name.size() + 8;
  ASSERT_EQ(payload.substr(config_at, ConfigBytes(identity.config).size()),
            ConfigBytes(identity.config));
  payload[config_at] = 99;
  ModelIdentity read;
  EXPECT_THAT(std::string(DecodeCreate(payload, &read).message()),
              StartsWith(absl::StrCat("model config: version at byte ",
                                      config_at, ": 99; this build reads")));
  // input_dim (right after the version), a u64, is followed by the target
  // count: cutting the record inside the targets' names names them.
  payload = EncodeCreate(1, identity);
  const std::size_t names_at = config_at + 4 + 8;
  EXPECT_EQ(DecodeCreate(payload.substr(0, names_at + 9), &read).message(),
            absl::StrCat("model config: target_names at byte ", names_at,
                         ": truncated"));
}

TEST(JournalRecordsTest,
     SamplesDecodeToTheirRowsAndACountThatDoesNotFitIsNamed) {
  const std::vector<double> x = {1, 2, 3, 4};
  const std::vector<double> y = {5, 6};
  const std::vector<Sample> samples = {
      Sample{{x.data(), 2}, {y.data(), 1}, 11},
      Sample{{x.data() + 2, 2}, {y.data() + 1, 1}, 12}};
  const std::string payload = EncodeSamples(3, 41, samples);
  SamplesRecord record;
  ASSERT_TRUE(DecodeSamples(payload, 2, 1, &record).ok());
  EXPECT_EQ(record.first_sequence, 41u);
  EXPECT_EQ(record.ids, (std::vector<std::uint64_t>{11, 12}));
  EXPECT_EQ(record.x, x);
  EXPECT_EQ(record.y, y);
  ExpectEveryCutRefused(payload, [](const std::string& bytes) {
    SamplesRecord out;
    return DecodeSamples(bytes, 2, 1, &out);
  });
  // Read as a model of three inputs: the rows do not fit.
  EXPECT_EQ(DecodeSamples(payload, 3, 1, &record).message(),
            "samples record: 2 samples of 3 inputs and 1 targets at byte 20 "
            "need 80 bytes, 64 follow");
}

TEST(JournalRecordsTest, TakeOversAndSnapshotRecordsDecodeOrNameTheirFault) {
  const TakeOverKey key{.work = TakeOverKey::Work::kPredictionIndexRebuild,
                        .index = 2,
                        .earliest = 900};
  std::string payload = EncodeTakeOver(5, key);
  TakeOverKey read_key;
  ASSERT_TRUE(DecodeTakeOver(payload, &read_key).ok());
  EXPECT_EQ(read_key, key);
  payload[8] = 9;  // no such work
  EXPECT_EQ(DecodeTakeOver(payload, &read_key).message(),
            "take-over key: work at byte 8: unknown kind 9");

  SnapshotHeader header;
  header.lsn = 77;
  header.identity = Identity();
  header.num_samples = 500;
  header.duplicate_samples = 3;
  header.recent_ids = {{1, 2}, {3, 4}};
  const std::string header_payload = EncodeSnapshotHeader(header);
  SnapshotHeader read;
  ASSERT_TRUE(DecodeSnapshotHeader(header_payload, &read).ok());
  EXPECT_EQ(read.lsn, 77u);
  EXPECT_EQ(read.num_samples, 500u);
  EXPECT_EQ(read.duplicate_samples, 3u);
  EXPECT_EQ(read.recent_ids, header.recent_ids);
  ExpectEveryCutRefused(header_payload, [](const std::string& bytes) {
    SnapshotHeader out;
    return DecodeSnapshotHeader(bytes, &out);
  });

  std::uint64_t lsn = 0, records = 0;
  ASSERT_TRUE(DecodeSnapshotEnd(EncodeSnapshotEnd(9, 4), &lsn, &records).ok());
  EXPECT_EQ(lsn, 9u);
  EXPECT_EQ(records, 4u);
  EXPECT_EQ(DecodeSnapshotEnd("short", &lsn, &records).message(),
            "snapshot end: truncated at byte 0");
}

}  // namespace
}  // namespace streamreg
