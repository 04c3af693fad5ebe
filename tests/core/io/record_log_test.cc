// The record format (core/io/record_format.h): round trips, a torn tail cut at
// every byte of the last record, a flipped bit in every byte of the
// records (header and payload), zero-filled tails, and a writer that undoes
// a failed append.
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "core/base/byte_coding.h"
#include "core/io/file_system.h"
#include "core/io/record_reader.h"
#include "core/io/record_writer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/fresh_directory.h"

namespace streamreg {
namespace {

using ::testing::HasSubstr;

struct Read {
  std::vector<std::string> payloads;
  RecordReader::Result end;
  std::uint64_t end_of_records;
  std::string error;
};

Read ReadAll(absl::string_view contents) {
  RecordReader reader(contents, "wal-000001.log");
  Read read;
  RecordType type;
  absl::string_view payload;
  for (;;) {
    read.end = reader.Next(&type, &payload);
    if (read.end != RecordReader::Result::kRecord) break;
    read.payloads.emplace_back(payload);
  }
  read.end_of_records = reader.end_of_records();
  read.error = std::string(reader.status().message());
  return read;
}

class RecordLogTest : public ::testing::Test {
 protected:
  void SetUp() override { directory_ = FreshDirectory(); }
  void TearDown() override { std::filesystem::remove_all(directory_); }

  // Writes the payloads as records and returns the file's bytes and each
  // record's starting offset.
  std::string WriteRecords(const std::vector<std::string>& payloads,
                           std::vector<std::uint64_t>* starts = nullptr) {
    const std::string path = directory_ + "/log";
    auto file = FileSystem::Default()->NewWritableFile(path);
    EXPECT_TRUE(file.ok()) << file.status();
    RecordWriter writer(file->get());
    for (const std::string& payload : payloads) {
      if (starts != nullptr) starts->push_back(writer.size());
      EXPECT_TRUE(writer.Add(RecordType{2}, payload).ok());
    }
    EXPECT_TRUE(writer.Sync().ok());
    EXPECT_TRUE((*file)->Close().ok());
    auto readable = FileSystem::Default()->OpenReadable(path);
    EXPECT_TRUE(readable.ok());
    return std::string((*readable)->contents());
  }

  std::string directory_;
};

std::vector<std::string> SomePayloads() {
  std::vector<std::string> payloads;
  for (int r = 0; r < 5; ++r) {
    std::string payload;
    ByteWriter out(&payload);
    out.U64(r + 1);
    out.Doubles(std::vector<double>(r * 3 + 1, 0.25 * r));
    payloads.push_back(payload);
  }
  payloads.push_back("");  // an empty payload is a record too
  return payloads;
}

TEST_F(RecordLogTest, RoundTripsEveryRecord) {
  const std::vector<std::string> payloads = SomePayloads();
  const std::string contents = WriteRecords(payloads);
  const Read read = ReadAll(contents);
  EXPECT_EQ(read.end, RecordReader::Result::kEnd);
  EXPECT_EQ(read.payloads, payloads);
  EXPECT_EQ(read.end_of_records, contents.size());
  EXPECT_EQ(ReadAll("").end, RecordReader::Result::kEnd);
}

TEST_F(RecordLogTest, DropsATornTailCutAtEveryByteOfTheLastRecord) {
  std::vector<std::string> payloads = SomePayloads();
  payloads.pop_back();
  std::vector<std::uint64_t> starts;
  const std::string contents = WriteRecords(payloads, &starts);
  const std::vector<std::string> kept(payloads.begin(), payloads.end() - 1);
  for (std::uint64_t cut = starts.back() + 1; cut < contents.size(); ++cut) {
    SCOPED_TRACE(::testing::Message() << "cut at " << cut);
    const Read read = ReadAll(absl::string_view(contents).substr(0, cut));
    EXPECT_EQ(read.end, RecordReader::Result::kTornTail) << read.error;
    EXPECT_EQ(read.payloads, kept);
    EXPECT_EQ(read.end_of_records, starts.back());
  }
}

TEST_F(RecordLogTest, DropsZeroFilledTails) {
  const std::vector<std::string> payloads = SomePayloads();
  std::vector<std::uint64_t> starts;
  const std::string contents = WriteRecords(payloads, &starts);
  // The last two records' bytes from some point on read back as zeros (a
  // power cut after the file grew, before its data was written).
  for (std::uint64_t from = starts[starts.size() - 2]; from < contents.size();
       from += 3) {
    SCOPED_TRACE(::testing::Message() << "zeros from " << from);
    std::string damaged = contents;
    std::fill(damaged.begin() + from, damaged.end(), '\0');
    const Read read = ReadAll(damaged);
    EXPECT_EQ(read.end, RecordReader::Result::kTornTail) << read.error;
    EXPECT_LE(read.payloads.size(), payloads.size() - 1);
    EXPECT_GE(read.payloads.size(), payloads.size() - 2);
  }
}

TEST_F(RecordLogTest, ReportsAFlippedBitInEveryByteBeforeTheLastRecord) {
  const std::vector<std::string> payloads = SomePayloads();
  std::vector<std::uint64_t> starts;
  const std::string contents = WriteRecords(payloads, &starts);
  for (std::uint64_t at = 0; at < starts.back(); ++at) {
    for (int bit : {0, 7}) {
      SCOPED_TRACE(::testing::Message() << "byte " << at << " bit " << bit);
      std::string damaged = contents;
      damaged[at] = static_cast<char>(damaged[at] ^ (1 << bit));
      const Read read = ReadAll(damaged);
      ASSERT_EQ(read.end, RecordReader::Result::kCorrupt);
      // Reported at the start of the damaged record, with the file name;
      // every record before it was read.
      const std::size_t record =
          std::upper_bound(starts.begin(), starts.end(), at) - starts.begin() -
          1;
      EXPECT_EQ(read.payloads.size(), record);
      EXPECT_THAT(read.error, HasSubstr("wal-000001.log at offset " +
                                        std::to_string(starts[record])));
      EXPECT_THAT(read.error, HasSubstr("checksum mismatch"));
    }
  }
}

TEST_F(RecordLogTest, TheLastRecordDamagedReadsAsATornTailOrCorruption) {
  std::vector<std::string> payloads = SomePayloads();
  payloads.pop_back();
  std::vector<std::uint64_t> starts;
  const std::string contents = WriteRecords(payloads, &starts);
  for (std::uint64_t at = starts.back(); at < contents.size(); ++at) {
    SCOPED_TRACE(::testing::Message() << "byte " << at);
    std::string damaged = contents;
    damaged[at] = static_cast<char>(damaged[at] ^ 0x10);
    const Read read = ReadAll(damaged);
    // A damaged payload of the last record cannot be told from a torn
    // write and is dropped; a damaged header is corruption. Either way the
    // record is never returned.
    EXPECT_NE(read.end, RecordReader::Result::kEnd);
    EXPECT_EQ(read.payloads.size(), payloads.size() - 1);
    if (at >= starts.back() + kRecordHeaderSize) {
      EXPECT_EQ(read.end, RecordReader::Result::kTornTail);
    }
  }
}

// A file whose appends fail after `budget` bytes (a full disk).
class FillingFile final : public WritableFile {
 public:
  explicit FillingFile(std::uint64_t budget) : budget_(budget) {}
  absl::Status Append(absl::string_view data) override {
    const std::uint64_t room = budget_ - std::min(budget_, bytes_.size());
    bytes_.append(data.data(), std::min<std::uint64_t>(room, data.size()));
    if (data.size() > room) {
      return absl::ResourceExhaustedError("append to log: No space left");
    }
    return absl::OkStatus();
  }
  absl::Status Sync() override { return absl::OkStatus(); }
  absl::Status Truncate(std::uint64_t size) override {
    if (fail_truncate_) return absl::UnavailableError("truncate log: EIO");
    bytes_.resize(size);
    return absl::OkStatus();
  }
  absl::Status Close() override { return absl::OkStatus(); }
  std::uint64_t size() const override { return bytes_.size(); }
  const std::string& path() const override { return path_; }

  std::string bytes_;
  std::uint64_t budget_;
  bool fail_truncate_ = false;
  std::string path_ = "log";
};

// Records read one by one and let go (ReadableFile::DoneWith, as recovery
// does with a snapshot): reading them again gives the same bytes.
TEST_F(RecordLogTest, RecordsLetGoReadBackTheSame) {
  std::vector<std::string> payloads;
  for (int r = 0; r < 40; ++r) {
    payloads.push_back(std::string(10'000 + 997 * r, static_cast<char>(r)));
  }
  const std::string written = WriteRecords(payloads);
  auto file = FileSystem::Default()->OpenReadable(directory_ + "/log");
  ASSERT_TRUE(file.ok()) << file.status();
  RecordReader reader((*file)->contents(), "log");
  RecordType type;
  absl::string_view payload;
  std::vector<absl::string_view> read;
  while (reader.Next(&type, &payload) == RecordReader::Result::kRecord) {
    (*file)->DoneWith(payload);
    read.push_back(payload);
  }
  ASSERT_EQ(read.size(), payloads.size());
  for (std::size_t r = 0; r < read.size(); ++r) {
    EXPECT_EQ(read[r], payloads[r]) << "record " << r;
  }
  (*file)->DoneWith((*file)->contents());
  EXPECT_EQ((*file)->contents(), written);
}

TEST(RecordWriterTest, UndoesAnAppendThatFailedHalfWay) {
  FillingFile file(100);
  RecordWriter writer(&file);
  ASSERT_TRUE(writer.Add(RecordType{2}, std::string(40, 'a')).ok());
  const absl::Status full = writer.Add(RecordType{2}, std::string(80, 'b'));
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(file.bytes_.size(), kRecordHeaderSize + 40);
  // Space again: the log goes on, whole.
  file.budget_ = 1000;
  ASSERT_TRUE(writer.Add(RecordType{2}, std::string(80, 'c')).ok());
  const Read read = ReadAll(file.bytes_);
  EXPECT_EQ(read.end, RecordReader::Result::kEnd);
  EXPECT_EQ(read.payloads, (std::vector<std::string>{std::string(40, 'a'),
                                                     std::string(80, 'c')}));
}

TEST(RecordWriterTest, IsBrokenWhenAFailedAppendCannotBeUndone) {
  FillingFile file(30);
  file.fail_truncate_ = true;
  RecordWriter writer(&file);
  EXPECT_FALSE(writer.Add(RecordType{2}, std::string(40, 'a')).ok());
  EXPECT_TRUE(writer.broken());
  file.budget_ = 1000;
  const absl::Status after = writer.Add(RecordType{2}, "x");
  EXPECT_EQ(after.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(after.message(), HasSubstr("truncate log"));
}

TEST(ByteReaderTest, NeverReadsPastTheEnd) {
  std::string bytes;
  ByteWriter out(&bytes);
  out.U64(3);
  out.Doubles(std::vector<double>{1.0, 2.0});
  ByteReader in(bytes);
  EXPECT_EQ(in.U64(), 3u);
  std::vector<double> three(3);
  EXPECT_FALSE(in.DoublesOfSize(&three));
  EXPECT_FALSE(in.ok());
  ByteReader truncated(absl::string_view(bytes).substr(0, 12));
  truncated.U64();
  EXPECT_TRUE(truncated.Doubles().empty());
  EXPECT_FALSE(truncated.ok());
}

}  // namespace
}  // namespace streamreg
