#include "common/file_contents.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace streamreg {

absl::StatusOr<std::string> ReadFileContents(const std::string& path,
                                             absl::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " ", path, ": cannot read: ", std::strerror(errno)));
  }
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " ", path, ": read error"));
  }
  return contents.str();
}

absl::Status ReadFlagFiles(std::initializer_list<FlagFile> files) {
  for (const FlagFile& file : files) {
    if (file.path.empty()) continue;
    absl::StatusOr<std::string> contents =
        ReadFileContents(file.path, file.flag);
    if (!contents.ok()) return contents.status();
    *file.contents = *std::move(contents);
  }
  return absl::OkStatus();
}

}  // namespace streamreg
