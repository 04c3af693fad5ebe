#ifndef STREAMREG_COMMON_FILE_CONTENTS_H_
#define STREAMREG_COMMON_FILE_CONTENTS_H_

#include <initializer_list>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace streamreg {

// The whole contents of a small file (a certificate, a key, a token list).
// On failure, InvalidArgument naming `what` (e.g. "--tls_cert"), the path
// and the reason.
absl::StatusOr<std::string> ReadFileContents(const std::string& path,
                                             absl::string_view what);

// ReadFileContents for a file of secrets (a token table): refused with
// FailedPrecondition, naming `what`, the path and its mode, when every user
// may read it or write it (a secret anyone could copy, or add to).
absl::StatusOr<std::string> ReadSecretFileContents(const std::string& path,
                                                   absl::string_view what);

// A file a flag names, to be read into *contents (nothing if path is empty).
struct FlagFile {
  std::string path;
  absl::string_view flag;
  std::string* contents;
};

// Reads every FlagFile; returns the first failure.
absl::Status ReadFlagFiles(std::initializer_list<FlagFile> files);

}  // namespace streamreg

#endif  // STREAMREG_COMMON_FILE_CONTENTS_H_
