#include "core/io/record_reader.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/base/byte_coding.h"

namespace streamreg {

RecordReader::Result RecordReader::Damaged(std::uint64_t from,
                                           absl::string_view damage) {
  status_ = absl::DataLossError(
      absl::StrCat(name_, " at offset ", position_, ": ", damage));
  const absl::string_view rest =
      contents_.substr(std::min<std::uint64_t>(from, contents_.size()));
  const bool zeros_only =
      std::all_of(rest.begin(), rest.end(), [](char c) { return c == 0; });
  return zeros_only ? Result::kTornTail : Result::kCorrupt;
}

RecordReader::Result RecordReader::Next(RecordType* type,
                                        absl::string_view* payload) {
  const std::uint64_t available = contents_.size() - position_;
  if (available == 0) return Result::kEnd;
  if (available < kRecordHeaderSize) {
    status_ = absl::DataLossError(absl::StrCat(
        name_, " at offset ", position_, ": the file ends inside a header"));
    return Result::kTornTail;
  }
  const absl::string_view header = contents_.substr(position_, 13);
  ByteReader fields(header);
  const std::uint32_t payload_crc = fields.U32();
  const std::uint32_t length = fields.U32();
  const std::uint8_t raw_type = fields.U8();
  const std::uint32_t header_crc = fields.U32();
  if (header_crc != Crc32(header.substr(0, 9))) {
    return Damaged(position_ + kRecordHeaderSize,
                   "record header checksum mismatch");
  }
  if (length > kMaxRecordLength || raw_type == 0) {
    return Damaged(position_ + kRecordHeaderSize, "invalid record header");
  }
  if (length > available - kRecordHeaderSize) {
    status_ = absl::DataLossError(absl::StrCat(name_, " at offset ", position_,
                                               ": the file ends inside "
                                               "a record of ",
                                               length, " bytes"));
    return Result::kTornTail;
  }
  const absl::string_view body =
      contents_.substr(position_ + kRecordHeaderSize, length);
  if (Crc32(body) != payload_crc) {
    return Damaged(position_ + kRecordHeaderSize + length,
                   "record payload checksum mismatch");
  }
  record_start_ = position_;
  position_ += kRecordHeaderSize + length;
  *type = static_cast<RecordType>(raw_type);
  *payload = body;
  return Result::kRecord;
}

absl::Status RecordReader::Malformed(absl::string_view what) const {
  return absl::DataLossError(absl::StrCat(name_, " at offset ", record_start_,
                                          ": malformed record: ", what));
}

}  // namespace streamreg
