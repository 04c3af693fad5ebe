#include "server/storage/data_directory.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"

namespace streamreg {

absl::StatusOr<std::unique_ptr<DataDirectory>> DataDirectory::Open(
    const std::string& path) {
  std::error_code error;
  std::filesystem::create_directories(path, error);
  if (error) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--data-dir ", path, ": cannot create: ", error.message()));
  }
  const std::string lock_path = absl::StrCat(path, "/LOCK");
  const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("--data-dir ", path, ": cannot open ", lock_path, ": ",
                     std::strerror(errno)));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int lock_error = errno;
    ::close(fd);
    return absl::FailedPreconditionError(
        absl::StrCat("--data-dir ", path, ": locked by another process (",
                     std::strerror(lock_error), ")"));
  }
  return std::unique_ptr<DataDirectory>(new DataDirectory(path, fd));
}

DataDirectory::~DataDirectory() { ::close(lock_fd_); }

}  // namespace streamreg
