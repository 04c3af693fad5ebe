#ifndef STREAMREG_SERVER_STORAGE_DATA_DIRECTORY_H_
#define STREAMREG_SERVER_STORAGE_DATA_DIRECTORY_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace streamreg {

// The server's data directory, created if missing and locked (an exclusive
// advisory lock on its LOCK file) for as long as this object lives, so two
// servers never share one. Models will persist here (write-ahead logs and
// snapshots).
class DataDirectory {
 public:
  // FAILED_PRECONDITION if another process holds the lock; the error names
  // the path.
  static absl::StatusOr<std::unique_ptr<DataDirectory>> Open(
      const std::string& path);
  ~DataDirectory();
  DataDirectory(const DataDirectory&) = delete;
  DataDirectory& operator=(const DataDirectory&) = delete;

  const std::string& path() const { return path_; }

 private:
  DataDirectory(std::string path, int lock_fd)
      : path_(std::move(path)), lock_fd_(lock_fd) {}

  std::string path_;
  int lock_fd_;
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_STORAGE_DATA_DIRECTORY_H_
