#ifndef STREAMREG_COMMON_COMMAND_LINE_H_
#define STREAMREG_COMMON_COMMAND_LINE_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace streamreg {

// Parses the command line with Abseil flags, accepting what users type:
// flags spelled with dashes or underscores (--data-dir, --data_dir), and
// `--config FILE`: a file of flags, one per line (`--listen=0.0.0.0:50051`,
// or `listen = 0.0.0.0:50051`; '#' starts a comment), which flags given on
// the command line override. Exits with a message on an unknown flag or a
// bad value (Abseil's behaviour). Returns the positional arguments after the
// program name.
std::vector<std::string> ParseCommandLine(int argc, char** argv);

// Prints "PROGRAM: CODE: message" on stderr for a failed command and
// returns its exit code (1).
int ReportFailure(const std::string& program, const absl::Status& status);

}  // namespace streamreg

#endif  // STREAMREG_COMMON_COMMAND_LINE_H_
