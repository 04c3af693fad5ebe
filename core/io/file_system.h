#ifndef STREAMREG_CORE_IO_FILE_SYSTEM_H_
#define STREAMREG_CORE_IO_FILE_SYSTEM_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace streamreg {

// A file being written from its start: appends, flushes to stable storage,
// and can be cut back to an earlier size (to undo a record whose write
// failed half-way).
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  // Hands the bytes to the operating system (they survive a crash of this
  // process, not a power cut).
  virtual absl::Status Append(absl::string_view data) = 0;
  // fsync: everything appended survives a power cut.
  virtual absl::Status Sync() = 0;
  virtual absl::Status Truncate(std::uint64_t size) = 0;
  virtual absl::Status Close() = 0;
  virtual std::uint64_t size() const = 0;
  virtual const std::string& path() const = 0;
};

// A whole file's contents for reading (memory-mapped by the POSIX file
// system: recovery reads snapshots of hundreds of megabytes without a copy).
class ReadableFile {
 public:
  virtual ~ReadableFile() = default;
  virtual absl::string_view contents() const = 0;
  // The caller will not read `bytes` (a part of contents()) again soon: a
  // mapped file lets go of the pages wholly inside them (they stay in the
  // page cache; reading them again maps them again), so a large file read
  // record by record is never resident all at once.
  virtual void DoneWith(absl::string_view bytes) const { (void)bytes; }
};

// Every file operation the storage layer makes, behind an interface (as
// LevelDB's Env) so that tests can inject failures — a full disk, a
// read-only directory, a failing fsync — where a real one cannot be had.
// Errors name the operation and the path; ENOSPC and EDQUOT are
// RESOURCE_EXHAUSTED, other I/O errors UNAVAILABLE, a missing file
// NOT_FOUND.
class FileSystem {
 public:
  virtual ~FileSystem() = default;
  // The operating system's file system (a process-wide instance).
  static FileSystem* Default();

  // Creates (or empties) the file at path.
  virtual absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(
      const std::string& path) = 0;
  virtual absl::StatusOr<std::unique_ptr<ReadableFile>> OpenReadable(
      const std::string& path) = 0;
  virtual absl::Status TruncateFile(const std::string& path,
                                    std::uint64_t size) = 0;
  // Creates the directory (and missing parents); OK if it exists.
  virtual absl::Status CreateDirectories(const std::string& path) = 0;
  // The names (not paths) of a directory's entries, sorted; NOT_FOUND if
  // it does not exist.
  virtual absl::StatusOr<std::vector<std::string>> ListDirectory(
      const std::string& path) = 0;
  virtual absl::Status RemoveFile(const std::string& path) = 0;
  // Removes a directory and everything in it; OK if it does not exist.
  virtual absl::Status RemoveAll(const std::string& path) = 0;
  // Atomic within one file system (rename(2)).
  virtual absl::Status Rename(const std::string& from,
                              const std::string& to) = 0;
  // fsyncs a directory, making the creation, renaming and removal of its
  // entries durable.
  virtual absl::Status SyncDirectory(const std::string& path) = 0;
  virtual bool Exists(const std::string& path) = 0;
};

// The status for a failed system call: `operation` and `path` name what
// failed, error_number says why (see FileSystem for the codes).
absl::Status FileError(absl::string_view operation, absl::string_view path,
                       int error_number);

}  // namespace streamreg

#endif  // STREAMREG_CORE_IO_FILE_SYSTEM_H_
