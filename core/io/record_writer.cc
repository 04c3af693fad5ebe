#include "core/io/record_writer.h"

#include <zlib.h>

#include "absl/strings/str_cat.h"
#include "core/base/byte_coding.h"

namespace streamreg {

std::uint32_t Crc32(absl::string_view data) {
  return static_cast<std::uint32_t>(
      crc32_z(0L, reinterpret_cast<const Bytef*>(data.data()), data.size()));
}

absl::Status RecordWriter::Add(RecordType type, absl::string_view payload) {
  if (!broken_.ok()) return broken_;
  if (payload.size() > kMaxRecordLength) {
    return absl::InvalidArgumentError(
        absl::StrCat("a record of ", payload.size(), " bytes is over the ",
                     kMaxRecordLength, " byte limit"));
  }
  buffer_.clear();
  buffer_.reserve(kRecordHeaderSize + payload.size());
  ByteWriter header(&buffer_);
  header.U32(Crc32(payload));
  header.U32(static_cast<std::uint32_t>(payload.size()));
  header.U8(static_cast<std::uint8_t>(type));
  header.U32(Crc32(buffer_));
  buffer_.append(payload.data(), payload.size());
  const std::uint64_t good_size = file_->size();
  absl::Status status = file_->Append(buffer_);
  if (status.ok()) return status;
  if (absl::Status undo = file_->Truncate(good_size); !undo.ok()) {
    broken_ = absl::UnavailableError(
        absl::StrCat(status.message(), "; then ", undo.message()));
    return broken_;
  }
  return status;
}

absl::Status RecordWriter::Sync() {
  if (!broken_.ok()) return broken_;
  return file_->Sync();
}

}  // namespace streamreg
