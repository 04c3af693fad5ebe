#include "common/file_contents.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

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

absl::StatusOr<std::string> ReadSecretFileContents(const std::string& path,
                                                   absl::string_view what) {
  struct stat status;
  if (::stat(path.c_str(), &status) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " ", path, ": cannot read: ", std::strerror(errno)));
  }
  const mode_t others = status.st_mode & (S_IROTH | S_IWOTH);
  if (others != 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s %s: %s by every user (mode %04o); it holds secrets: chmod o-rw "
        "it (e.g. chmod 600, or 640 for a group the server is in)",
        what, path,
        others == (S_IROTH | S_IWOTH)
            ? "readable and writable"
            : (others == S_IROTH ? "readable" : "writable"),
        status.st_mode & 07777));
  }
  return ReadFileContents(path, what);
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
