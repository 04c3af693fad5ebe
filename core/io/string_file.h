#ifndef STREAMREG_CORE_IO_STRING_FILE_H_
#define STREAMREG_CORE_IO_STRING_FILE_H_

#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/io/file_system.h"

namespace streamreg {

// A WritableFile in memory: records written with a RecordWriter into a
// string, for bytes that go somewhere other than a local file (a cluster
// model's snapshot, stored in JetStream). Sync and Close do nothing.
class StringWritableFile final : public WritableFile {
 public:
  // `name` stands for the path in what is reported.
  explicit StringWritableFile(std::string name) : name_(std::move(name)) {}

  absl::Status Append(absl::string_view data) override {
    contents_.append(data.data(), data.size());
    return absl::OkStatus();
  }
  absl::Status Sync() override { return absl::OkStatus(); }
  absl::Status Truncate(std::uint64_t size) override {
    if (size < contents_.size()) contents_.resize(size);
    return absl::OkStatus();
  }
  absl::Status Close() override { return absl::OkStatus(); }
  std::uint64_t size() const override { return contents_.size(); }
  const std::string& path() const override { return name_; }

  const std::string& contents() const { return contents_; }
  std::string Release() { return std::exchange(contents_, {}); }

 private:
  std::string name_;
  std::string contents_;
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_IO_STRING_FILE_H_
