#ifndef STREAMREG_TESTS_SUPPORT_FAULT_INJECTING_FILE_SYSTEM_H_
#define STREAMREG_TESTS_SUPPORT_FAULT_INJECTING_FILE_SYSTEM_H_

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/io/file_system.h"

namespace streamreg {

// The operating system's file system with failures switched on at will, as
// a full disk (ENOSPC), a read-only one (EROFS) or a failing device (EIO)
// would produce them. A failing append first writes half of its data, as a
// real short write can.
class FaultInjectingFileSystem final : public FileSystem {
 public:
  std::atomic<int> append_error{0};  // errno for appends, 0 = none
  std::atomic<int> sync_error{0};    // for fsyncs of files
  std::atomic<int> create_error{0};  // creating files or directories
  std::atomic<int> file_syncs{0};    // fsyncs of files that succeeded

  // A slow disk: from HoldSyncs() on, every fsync of a file waits until
  // ReleaseSyncs(); syncs_waiting() counts those waiting now.
  void HoldSyncs() {
    std::lock_guard<std::mutex> lock(hold_mutex_);
    holding_ = true;
  }
  void ReleaseSyncs() {
    {
      std::lock_guard<std::mutex> lock(hold_mutex_);
      holding_ = false;
    }
    released_.notify_all();
  }
  int syncs_waiting() const { return syncs_waiting_.load(); }

  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(
      const std::string& path) override {
    if (const int error = create_error.load()) {
      return FileError("create", path, error);
    }
    absl::StatusOr<std::unique_ptr<WritableFile>> file =
        base_->NewWritableFile(path);
    if (!file.ok()) return file.status();
    return std::make_unique<File>(this, *std::move(file));
  }
  absl::StatusOr<std::unique_ptr<ReadableFile>> OpenReadable(
      const std::string& path) override {
    return base_->OpenReadable(path);
  }
  absl::Status TruncateFile(const std::string& path,
                            std::uint64_t size) override {
    return base_->TruncateFile(path, size);
  }
  absl::Status CreateDirectories(const std::string& path) override {
    if (const int error = create_error.load()) {
      if (!base_->Exists(path)) return FileError("create", path, error);
    }
    return base_->CreateDirectories(path);
  }
  absl::StatusOr<std::vector<std::string>> ListDirectory(
      const std::string& path) override {
    return base_->ListDirectory(path);
  }
  absl::Status RemoveFile(const std::string& path) override {
    return base_->RemoveFile(path);
  }
  absl::Status RemoveAll(const std::string& path) override {
    return base_->RemoveAll(path);
  }
  absl::Status Rename(const std::string& from, const std::string& to) override {
    if (const int error = create_error.load()) {
      return FileError("rename", from, error);
    }
    return base_->Rename(from, to);
  }
  absl::Status SyncDirectory(const std::string& path) override {
    return base_->SyncDirectory(path);
  }
  bool Exists(const std::string& path) override { return base_->Exists(path); }

 private:
  class File final : public WritableFile {
   public:
    File(FaultInjectingFileSystem* fs, std::unique_ptr<WritableFile> base)
        : fs_(fs), base_(std::move(base)) {}
    absl::Status Append(absl::string_view data) override {
      if (const int error = fs_->append_error.load()) {
        (void)base_->Append(data.substr(0, data.size() / 2));
        return FileError("append to", base_->path(), error);
      }
      return base_->Append(data);
    }
    absl::Status Sync() override {
      fs_->WaitWhileHeld();
      if (const int error = fs_->sync_error.load()) {
        return FileError("fsync", base_->path(), error);
      }
      absl::Status status = base_->Sync();
      if (status.ok()) ++fs_->file_syncs;
      return status;
    }
    absl::Status Truncate(std::uint64_t size) override {
      return base_->Truncate(size);
    }
    absl::Status Close() override { return base_->Close(); }
    std::uint64_t size() const override { return base_->size(); }
    const std::string& path() const override { return base_->path(); }

   private:
    FaultInjectingFileSystem* fs_;
    std::unique_ptr<WritableFile> base_;
  };

  void WaitWhileHeld() {
    std::unique_lock<std::mutex> lock(hold_mutex_);
    if (!holding_) return;
    ++syncs_waiting_;
    released_.wait(lock, [this] { return !holding_; });
    --syncs_waiting_;
  }

  FileSystem* base_ = FileSystem::Default();
  std::mutex hold_mutex_;
  std::condition_variable released_;
  bool holding_ = false;
  std::atomic<int> syncs_waiting_{0};
};

}  // namespace streamreg

#endif  // STREAMREG_TESTS_SUPPORT_FAULT_INJECTING_FILE_SYSTEM_H_
