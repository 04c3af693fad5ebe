#include "common/command_line.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "absl/flags/parse.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace streamreg {
namespace {

// "--data-dir=a-b" -> "--data_dir=a-b": dashes of the name only.
std::string Underscored(std::string argument) {
  if (absl::StartsWith(argument, "--")) {
    const std::size_t end = std::min(argument.find('='), argument.size());
    std::replace(argument.begin() + 2, argument.begin() + end, '-', '_');
  }
  return argument;
}

// The flags of a config file, as command-line arguments.
std::vector<std::string> ConfigArguments(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "--config %s: cannot open\n", path.c_str());
    std::exit(2);
  }
  std::vector<std::string> arguments;
  std::string line;
  while (std::getline(in, line)) {
    absl::string_view text = line;
    text = text.substr(0, text.find('#'));
    text = absl::StripAsciiWhitespace(text);
    if (text.empty()) continue;
    std::string flag(text);
    if (!absl::StartsWith(flag, "--")) {
      // "name = value" or "name value"
      const std::size_t split = flag.find_first_of("= \t");
      std::string name = flag.substr(0, split);
      std::string value =
          split == std::string::npos
              ? ""
              : std::string(absl::StripAsciiWhitespace(absl::StripPrefix(
                    absl::StripLeadingAsciiWhitespace(flag.substr(split)),
                    "=")));
      flag = value.empty() ? absl::StrCat("--", name)
                           : absl::StrCat("--", name, "=", value);
    }
    arguments.push_back(Underscored(flag));
  }
  return arguments;
}

}  // namespace

std::vector<std::string> ParseCommandLine(int argc, char** argv) {
  std::vector<std::string> from_config;
  std::vector<std::string> given;
  for (int i = 1; i < argc; ++i) {
    const std::string argument = Underscored(argv[i]);
    if (argument == "--config" && i + 1 < argc) {
      from_config = ConfigArguments(argv[++i]);
    } else if (absl::StartsWith(argument, "--config=")) {
      from_config = ConfigArguments(argument.substr(9));
    } else {
      given.push_back(argument);
    }
  }
  // The config file first: a flag parsed later overrides it.
  std::vector<std::string> arguments = {argv[0]};
  arguments.insert(arguments.end(), from_config.begin(), from_config.end());
  arguments.insert(arguments.end(), given.begin(), given.end());
  std::vector<char*> pointers;
  for (std::string& argument : arguments) pointers.push_back(argument.data());
  const std::vector<char*> positional = absl::ParseCommandLine(
      static_cast<int>(pointers.size()), pointers.data());
  return {positional.begin() + 1, positional.end()};
}

int ReportFailure(const std::string& program, const absl::Status& status) {
  std::fprintf(stderr, "%s: %s: %s\n", program.c_str(),
               absl::StatusCodeToString(status.code()).c_str(),
               std::string(status.message()).c_str());
  return 1;
}

}  // namespace streamreg
