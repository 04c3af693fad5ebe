#ifndef STREAMREG_CORE_IO_RECORD_WRITER_H_
#define STREAMREG_CORE_IO_RECORD_WRITER_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/io/file_system.h"
#include "core/io/record_format.h"

namespace streamreg {

// Appends records (core/io/record_format.h) to a file. A record whose append
// fails is cut off again, so the file never holds half a record while the
// process lives; if even that fails the writer is broken and refuses every
// later record (the file's end is then unknown).
class RecordWriter {
 public:
  explicit RecordWriter(WritableFile* file) : file_(file) {}

  absl::Status Add(RecordType type, absl::string_view payload);
  absl::Status Sync();
  // Bytes of whole records written.
  std::uint64_t size() const { return file_->size(); }
  bool broken() const { return !broken_.ok(); }

 private:
  WritableFile* file_;
  absl::Status broken_;
  std::string buffer_;
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_IO_RECORD_WRITER_H_
