#ifndef STREAMREG_CORE_IO_RECORD_READER_H_
#define STREAMREG_CORE_IO_RECORD_READER_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/io/record_format.h"

namespace streamreg {

// Reads the records of one file's contents (core/io/record_format.h) and tells
// a clean end from a torn tail and from corruption.
class RecordReader {
 public:
  // `name` (the file's path) is quoted in errors.
  RecordReader(absl::string_view contents, std::string name)
      : contents_(contents), name_(std::move(name)) {}

  enum class Result {
    kRecord,    // *type and *payload (a view into the contents) are set
    kEnd,       // the contents end after a whole record
    kTornTail,  // the rest, from end_of_records(), is a torn write
    kCorrupt,   // status() says where and how
  };
  Result Next(RecordType* type, absl::string_view* payload);

  // Offset just past the last whole, valid record read.
  std::uint64_t end_of_records() const { return position_; }
  // DATA_LOSS naming the file, the offset and the damage (after kCorrupt;
  // after kTornTail it describes the tail).
  const absl::Status& status() const { return status_; }
  // A payload the caller could not decode: a DATA_LOSS status at the
  // record just read.
  absl::Status Malformed(absl::string_view what) const;

 private:
  // kTornTail if only zeros follow offset `from`, else kCorrupt; both with
  // `damage` recorded.
  Result Damaged(std::uint64_t from, absl::string_view damage);

  absl::string_view contents_;
  std::string name_;
  std::uint64_t position_ = 0;
  std::uint64_t record_start_ = 0;
  absl::Status status_;
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_IO_RECORD_READER_H_
