#ifndef STREAMREG_COMMON_COMMAND_LINE_H_
#define STREAMREG_COMMON_COMMAND_LINE_H_

#include <initializer_list>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace streamreg {

// What a program, or one command of a program, takes and says about itself
// in --help. Flags are Abseil flags (ABSL_FLAG), named here without "--".
struct CommandUsage {
  // As typed: "streamreg-server", "streamreg create".
  std::string name = "";
  // What follows the name: "--model NAME --csv FILE [flags]".
  std::string synopsis = "";
  // What it does, one paragraph.
  std::string summary = "";
  // The flags it takes, in the help's order.
  std::vector<std::string> flags = {};
  // Flags it takes too, listed under their own heading ("Connection
  // flags") so that the command's own stand out.
  std::string shared_flags_heading = "";
  std::vector<std::string> shared_flags = {};
  // Command lines; at least one.
  std::vector<std::string> examples = {};
  // Anything said after the examples.
  std::string details = "";
  // Also accepts --config FILE.
  bool config_file = false;
};

// The flags defined (ABSL_FLAG) in source files whose paths end with one of
// `files` ("server/cmd/main.cc"), sorted by name.
std::vector<std::string> FlagsDefinedIn(
    std::initializer_list<absl::string_view> files);

// What the arguments asked for.
struct ParsedArguments {
  bool help = false;                    // --help, -h or --helpfull
  std::vector<std::string> positional;  // in order
};

// Sets the flags `usage` takes from `arguments` (the command line without
// the program name), accepting what users type: --name=value, --name value,
// a bare --name or --noname for a boolean, dashes or underscores in names
// (--data-dir, --data_dir), "--" before positional arguments that start
// with a dash, and with usage.config_file `--config FILE`: a file of flags,
// one per line (`--listen=0.0.0.0:50051` or `listen = 0.0.0.0:50051`, '#'
// starts a comment), which flags given on the command line override.
// InvalidArgument, with a one-line message, for a flag the usage does not
// take, a missing or malformed value, or an unreadable config file.
absl::StatusOr<ParsedArguments> ParseArguments(
    const std::vector<std::string>& arguments, const CommandUsage& usage);

// The words of `arguments` that are not flags or flag values (so that a
// program can pick its command before parsing the command's flags). A
// `--name` whose flag is a known boolean takes no value; any other takes
// the next word unless written --name=value.
std::vector<std::string> PositionalWords(
    const std::vector<std::string>& arguments);

// The text --help prints: usage line, summary, flags with their help and
// defaults, examples.
std::string HelpText(const CommandUsage& usage);

// ParseArguments for main(): prints the help to stdout and exits 0 on
// --help; prints "NAME: message (see NAME --help)" to stderr
// and exits 2 on an error. Returns the positional arguments.
std::vector<std::string> ParseCommandLine(int argc, char** argv,
                                          const CommandUsage& usage);
std::vector<std::string> ParseCommandLine(
    const std::vector<std::string>& arguments, const CommandUsage& usage);

// ParseCommandLine for a program that takes flags only: a positional
// argument is a usage error (exit 2).
void ParseFlagsOnly(int argc, char** argv, const CommandUsage& usage);

// Prints "PROGRAM: message (see PROGRAM --help)" on stderr and returns 2:
// a usage error (an unknown flag or command, a missing flag).
int ReportUsageError(const std::string& program, const std::string& message);

// A command line that asks for something impossible (a flag's bad value,
// a missing flag, flags that do not go together): InvalidArgument with
// `message`, marked so that ReportFailure treats it as a usage error.
absl::Status UsageError(absl::string_view message);
bool IsUsageError(const absl::Status& status);

// Prints "PROGRAM: CODE: message" on stderr for a failed command and
// returns its exit code: 1, or 2 for a UsageError (reported as by
// ReportUsageError).
int ReportFailure(const std::string& program, const absl::Status& status);

}  // namespace streamreg

#endif  // STREAMREG_COMMON_COMMAND_LINE_H_
