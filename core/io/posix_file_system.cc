// The operating system's FileSystem: POSIX calls for files, std::filesystem
// for directories.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "core/io/file_system.h"

namespace streamreg {
namespace {

absl::Status FromErrorCode(absl::string_view operation, absl::string_view path,
                           const std::error_code& error) {
  return FileError(operation, path, error.value());
}

class PosixWritableFile final : public WritableFile {
 public:
  PosixWritableFile(std::string path, int fd)
      : path_(std::move(path)), fd_(fd) {}
  ~PosixWritableFile() override {
    if (fd_ >= 0) ::close(fd_);
  }

  absl::Status Append(absl::string_view data) override {
    while (!data.empty()) {
      const ssize_t written = ::write(fd_, data.data(), data.size());
      if (written < 0) {
        if (errno == EINTR) continue;
        return FileError("append to", path_, errno);
      }
      data.remove_prefix(static_cast<std::size_t>(written));
      size_ += static_cast<std::uint64_t>(written);
    }
    return absl::OkStatus();
  }

  absl::Status Sync() override {
    if (::fdatasync(fd_) != 0) return FileError("fsync", path_, errno);
    return absl::OkStatus();
  }

  absl::Status Truncate(std::uint64_t size) override {
    if (::ftruncate(fd_, static_cast<off_t>(size)) != 0) {
      return FileError("truncate", path_, errno);
    }
    if (::lseek(fd_, static_cast<off_t>(size), SEEK_SET) < 0) {
      return FileError("seek in", path_, errno);
    }
    size_ = size;
    return absl::OkStatus();
  }

  absl::Status Close() override {
    if (fd_ < 0) return absl::OkStatus();
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) return FileError("close", path_, errno);
    return absl::OkStatus();
  }

  std::uint64_t size() const override { return size_; }
  const std::string& path() const override { return path_; }

 private:
  std::string path_;
  int fd_;
  std::uint64_t size_ = 0;
};

class MappedFile final : public ReadableFile {
 public:
  MappedFile(void* data, std::size_t size) : data_(data), size_(size) {}
  ~MappedFile() override {
    if (data_ != nullptr) ::munmap(data_, size_);
  }
  absl::string_view contents() const override {
    return {static_cast<const char*>(data_), size_};
  }
  void DoneWith(absl::string_view bytes) const override {
    static const std::uintptr_t page =
        static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    const auto begin = reinterpret_cast<std::uintptr_t>(bytes.data());
    const std::uintptr_t first = (begin + page - 1) / page * page;
    const std::uintptr_t last = (begin + bytes.size()) / page * page;
    if (first < last) {
      // A read-only private mapping never written: nothing is lost.
      ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
    }
  }

 private:
  void* data_;
  std::size_t size_;
};

class PosixFileSystem final : public FileSystem {
 public:
  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(
      const std::string& path) override {
    const int fd =
        ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return FileError("create", path, errno);
    return std::make_unique<PosixWritableFile>(path, fd);
  }

  absl::StatusOr<std::unique_ptr<ReadableFile>> OpenReadable(
      const std::string& path) override {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return FileError("open", path, errno);
    struct stat info;
    if (::fstat(fd, &info) != 0) {
      const int error = errno;
      ::close(fd);
      return FileError("stat", path, error);
    }
    const std::size_t size = static_cast<std::size_t>(info.st_size);
    void* data = nullptr;
    if (size > 0) {
      data = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
      if (data == MAP_FAILED) {
        const int error = errno;
        ::close(fd);
        return FileError("map", path, error);
      }
      ::madvise(data, size, MADV_SEQUENTIAL);
    }
    ::close(fd);
    return std::make_unique<MappedFile>(data, size);
  }

  absl::Status TruncateFile(const std::string& path,
                            std::uint64_t size) override {
    if (::truncate(path.c_str(), static_cast<off_t>(size)) != 0) {
      return FileError("truncate", path, errno);
    }
    return absl::OkStatus();
  }

  absl::Status CreateDirectories(const std::string& path) override {
    std::error_code error;
    std::filesystem::create_directories(path, error);
    if (error) return FromErrorCode("create directory", path, error);
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<std::string>> ListDirectory(
      const std::string& path) override {
    std::error_code error;
    std::vector<std::string> names;
    for (std::filesystem::directory_iterator it(path, error), end;
         !error && it != end; it.increment(error)) {
      names.push_back(it->path().filename().string());
    }
    if (error) return FromErrorCode("list", path, error);
    std::sort(names.begin(), names.end());
    return names;
  }

  absl::Status RemoveFile(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return FileError("remove", path, errno);
    return absl::OkStatus();
  }

  absl::Status RemoveAll(const std::string& path) override {
    std::error_code error;
    std::filesystem::remove_all(path, error);
    if (error) return FromErrorCode("remove", path, error);
    return absl::OkStatus();
  }

  absl::Status Rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) {
      return FileError("rename", absl::StrCat(from, " to ", to), errno);
    }
    return absl::OkStatus();
  }

  absl::Status SyncDirectory(const std::string& path) override {
    const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return FileError("open directory", path, errno);
    const int result = ::fsync(fd);
    const int error = errno;
    ::close(fd);
    if (result != 0) return FileError("fsync directory", path, error);
    return absl::OkStatus();
  }

  bool Exists(const std::string& path) override {
    return ::access(path.c_str(), F_OK) == 0;
  }
};

}  // namespace

absl::Status FileError(absl::string_view operation, absl::string_view path,
                       int error_number) {
  const std::string message =
      absl::StrCat(operation, " ", path, ": ", std::strerror(error_number));
  switch (error_number) {
    case ENOSPC:
    case EDQUOT:
      return absl::ResourceExhaustedError(message);
    case ENOENT:
      return absl::NotFoundError(message);
    default:
      return absl::UnavailableError(message);
  }
}

FileSystem* FileSystem::Default() {
  static PosixFileSystem* const file_system = new PosixFileSystem;
  return file_system;
}

}  // namespace streamreg
