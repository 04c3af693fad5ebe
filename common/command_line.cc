#include "common/command_line.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "common/nearest_name.h"

namespace streamreg {
namespace {

// "data-dir" -> "data_dir".
std::string Underscored(absl::string_view name) {
  std::string out(name);
  std::replace(out.begin(), out.end(), '-', '_');
  return out;
}

bool IsFlag(absl::string_view argument) {
  return argument.size() > 1 && argument[0] == '-' && argument != "--";
}

bool IsHelp(absl::string_view name) {
  return name == "help" || name == "h" || name == "helpfull";
}

// A flag argument taken apart: "--data-dir=x" -> {"data_dir", "x", true}.
struct FlagArgument {
  std::string name = "";
  std::string value = "";
  bool has_value = false;
};

FlagArgument Split(absl::string_view argument) {
  argument = absl::StripPrefix(absl::StripPrefix(argument, "-"), "-");
  FlagArgument out;
  const std::size_t equals = argument.find('=');
  out.name = Underscored(argument.substr(0, equals));
  if (equals != absl::string_view::npos) {
    out.value = std::string(argument.substr(equals + 1));
    out.has_value = true;
  }
  return out;
}

bool IsBoolean(absl::string_view name) {
  const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
  return flag != nullptr && flag->IsOfType<bool>();
}

// The flags of a config file, as command-line arguments.
absl::StatusOr<std::vector<std::string>> ConfigArguments(
    const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat("--config ", path, ": cannot open"));
  }
  std::vector<std::string> arguments;
  std::string line;
  while (std::getline(in, line)) {
    absl::string_view text = line;
    text = absl::StripAsciiWhitespace(text.substr(0, text.find('#')));
    if (text.empty()) continue;
    if (absl::StartsWith(text, "--")) {
      arguments.emplace_back(text);
      continue;
    }
    // "name = value" or "name value"
    const std::size_t split = text.find_first_of("= \t");
    const absl::string_view name = text.substr(0, split);
    const absl::string_view value =
        split == absl::string_view::npos
            ? absl::string_view()
            : absl::StripAsciiWhitespace(absl::StripPrefix(
                  absl::StripLeadingAsciiWhitespace(text.substr(split)), "="));
    arguments.push_back(value.empty() ? absl::StrCat("--", name)
                                      : absl::StrCat("--", name, "=", value));
  }
  return arguments;
}

// --config FILE (or --config=FILE) taken out of `arguments`, its flags put
// first so that the command line overrides them.
absl::StatusOr<std::vector<std::string>> WithConfigFile(
    const std::vector<std::string>& arguments) {
  std::vector<std::string> from_config;
  std::vector<std::string> given;
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    if (arguments[i] == "--") {
      given.insert(given.end(), arguments.begin() + i, arguments.end());
      break;
    }
    const FlagArgument flag =
        IsFlag(arguments[i]) ? Split(arguments[i]) : FlagArgument{.name = ""};
    if (flag.name != "config") {
      given.push_back(arguments[i]);
      continue;
    }
    std::string path = flag.value;
    if (!flag.has_value) {
      if (i + 1 == arguments.size()) {
        return absl::InvalidArgumentError("--config needs a file");
      }
      path = arguments[++i];
    }
    absl::StatusOr<std::vector<std::string>> read = ConfigArguments(path);
    if (!read.ok()) return read.status();
    from_config.insert(from_config.end(), read->begin(), read->end());
  }
  from_config.insert(from_config.end(), given.begin(), given.end());
  return from_config;
}

std::string DefaultText(const absl::CommandLineFlag& flag) {
  const std::string value = flag.DefaultValue();
  if (flag.IsOfType<std::string>()) return absl::StrCat("\"", value, "\"");
  return value;
}

// What a value of `flag` looks like, for a value that did not parse: by
// its type, and its default.
std::string ExpectedValue(const absl::CommandLineFlag& flag) {
  std::string kind = "a value of its type";
  if (flag.IsOfType<bool>()) {
    kind = "true or false";
  } else if (flag.IsOfType<double>() || flag.IsOfType<float>()) {
    kind = "a number";
  } else if (flag.IsOfType<std::int32_t>() || flag.IsOfType<std::int64_t>()) {
    kind = "a whole number";
  } else if (flag.IsOfType<std::uint32_t>() || flag.IsOfType<std::uint64_t>() ||
             flag.IsOfType<std::optional<std::uint64_t>>()) {
    kind = "a whole number, 0 or more";
  } else if (flag.IsOfType<absl::Duration>()) {
    kind = "a duration such as 500ms, 2s or 1m";
  }
  const std::string default_value = flag.DefaultValue();
  if (default_value.empty()) return absl::StrCat("expected ", kind);
  return absl::StrCat("expected ", kind, " (its default is ", default_value,
                      ")");
}

constexpr std::size_t kWidth = 79;

// `text` broken into lines of at most kWidth characters (longer words stay
// whole), each starting with `indent`; existing line breaks are kept.
// Lines after the first of a paragraph start with `continuation` instead,
// and a broken line ends with `line_end` (" \\" for a command line).
std::string Wrapped(absl::string_view text, absl::string_view indent,
                    absl::string_view continuation,
                    absl::string_view line_end = "") {
  std::string out;
  for (absl::string_view paragraph : absl::StrSplit(text, '\n')) {
    if (absl::StartsWith(paragraph, "  ")) {  // laid out by hand: kept
      absl::StrAppend(&out, indent, paragraph, "\n");
      continue;
    }
    std::string line(indent);
    std::size_t start = indent.size();
    for (absl::string_view word :
         absl::StrSplit(paragraph, ' ', absl::SkipEmpty())) {
      if (line.size() > start &&
          line.size() + 1 + word.size() + line_end.size() > kWidth) {
        absl::StrAppend(&out, line, line_end, "\n");
        line = std::string(continuation);
        start = continuation.size();
      }
      absl::StrAppend(&line, line.size() > start ? " " : "", word);
    }
    absl::StrAppend(&out, line.size() > start ? line : "", "\n");
  }
  return out;
}

std::string Wrapped(absl::string_view text, absl::string_view indent) {
  return Wrapped(text, indent, indent);
}

// A command line as an example: broken only before a flag, never between
// a flag and its value, continued with a backslash.
std::string WrappedCommand(absl::string_view command) {
  constexpr char kKeepTogether = '\x01';
  std::vector<std::string> words =
      absl::StrSplit(command, ' ', absl::SkipEmpty());
  std::string joined;
  for (std::size_t i = 0; i < words.size(); ++i) {
    const bool flag_with_value =
        absl::StartsWith(words[i], "--") && !absl::StrContains(words[i], '=') &&
        i + 1 < words.size() && !absl::StartsWith(words[i + 1], "-");
    absl::StrAppend(&joined, i == 0 ? "" : " ", words[i]);
    if (flag_with_value)
      absl::StrAppend(&joined, std::string(1, kKeepTogether), words[++i]);
  }
  std::string out = Wrapped(joined, "  ", "      ", " \\");
  std::replace(out.begin(), out.end(), kKeepTogether, ' ');
  return out;
}

void AppendFlags(const std::vector<std::string>& names, std::string* out) {
  for (const std::string& name : names) {
    const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag == nullptr) continue;
    absl::StrAppend(out, "  --", name, "  (default ", DefaultText(*flag), ")\n",
                    Wrapped(flag->Help(), "      "));
  }
}

}  // namespace

std::vector<std::string> FlagsDefinedIn(
    std::initializer_list<absl::string_view> files) {
  std::vector<std::string> names;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    const std::string file = flag->Filename();
    for (absl::string_view suffix : files) {
      if (absl::EndsWith(file, suffix)) names.emplace_back(name);
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

absl::StatusOr<ParsedArguments> ParseArguments(
    const std::vector<std::string>& given, const CommandUsage& usage) {
  std::vector<std::string> arguments = given;
  if (usage.config_file) {
    absl::StatusOr<std::vector<std::string>> expanded = WithConfigFile(given);
    if (!expanded.ok()) return expanded.status();
    arguments = *std::move(expanded);
  }
  auto takes = [&usage](const std::string& name) {
    return std::find(usage.flags.begin(), usage.flags.end(), name) !=
               usage.flags.end() ||
           std::find(usage.shared_flags.begin(), usage.shared_flags.end(),
                     name) != usage.shared_flags.end();
  };
  ParsedArguments parsed;
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    const std::string& argument = arguments[i];
    if (argument == "--") {
      parsed.positional.insert(parsed.positional.end(),
                               arguments.begin() + i + 1, arguments.end());
      break;
    }
    if (!IsFlag(argument)) {
      parsed.positional.push_back(argument);
      continue;
    }
    FlagArgument flag = Split(argument);
    if (IsHelp(flag.name)) {
      parsed.help = true;
      continue;
    }
    // --noname for a boolean --name.
    if (!takes(flag.name) && !flag.has_value &&
        absl::StartsWith(flag.name, "no") && takes(flag.name.substr(2)) &&
        IsBoolean(flag.name.substr(2))) {
      flag = {.name = flag.name.substr(2), .value = "false", .has_value = true};
    }
    absl::CommandLineFlag* target = absl::FindCommandLineFlag(flag.name);
    if (!takes(flag.name) || target == nullptr) {
      std::vector<std::string> known = usage.flags;
      known.insert(known.end(), usage.shared_flags.begin(),
                   usage.shared_flags.end());
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag --", flag.name,
                       DidYouMean(flag.name, known, "--", "")));
    }
    if (!flag.has_value) {
      if (target->IsOfType<bool>()) {
        flag.value = "true";
      } else if (i + 1 < arguments.size()) {
        flag.value = arguments[++i];
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat("--", flag.name, " needs a value"));
      }
    }
    std::string error;
    if (!target->ParseFrom(flag.value, &error)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--", flag.name, "=", flag.value, ": ", ExpectedValue(*target)));
    }
  }
  return parsed;
}

std::vector<std::string> PositionalWords(
    const std::vector<std::string>& arguments) {
  std::vector<std::string> words;
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    if (arguments[i] == "--") {
      words.insert(words.end(), arguments.begin() + i + 1, arguments.end());
      break;
    }
    if (!IsFlag(arguments[i])) {
      words.push_back(arguments[i]);
      continue;
    }
    const FlagArgument flag = Split(arguments[i]);
    const bool boolean =
        IsBoolean(flag.name) || IsHelp(flag.name) ||
        (absl::StartsWith(flag.name, "no") && IsBoolean(flag.name.substr(2)));
    const bool known = absl::FindCommandLineFlag(flag.name) != nullptr ||
                       flag.name == "config";
    if (!flag.has_value && !boolean && known) ++i;  // its value
  }
  return words;
}

std::string HelpText(const CommandUsage& usage) {
  std::string out = absl::StrCat(
      Wrapped(absl::StrCat("usage: ", usage.name, " ", usage.synopsis), "",
              "    "),
      "\n");
  if (!usage.summary.empty()) {
    absl::StrAppend(&out, Wrapped(usage.summary, ""), "\n");
  }
  if (!usage.flags.empty()) {
    absl::StrAppend(&out, "Flags (spelled with dashes or underscores):\n");
    AppendFlags(usage.flags, &out);
    if (usage.config_file) {
      absl::StrAppend(&out, "  --config FILE\n",
                      Wrapped("flags from FILE, one per line (listen = "
                              "0.0.0.0:50051, or --listen=...; '#' comments); "
                              "the command line overrides them",
                              "      "));
    }
    absl::StrAppend(&out, "\n");
  }
  if (!usage.shared_flags.empty()) {
    absl::StrAppend(&out, usage.shared_flags_heading, ":\n");
    AppendFlags(usage.shared_flags, &out);
    absl::StrAppend(&out, "\n");
  }
  absl::StrAppend(&out,
                  usage.examples.size() == 1 ? "Example:\n" : "Examples:\n");
  for (const std::string& example : usage.examples) {
    absl::StrAppend(&out, WrappedCommand(example));
  }
  if (!usage.details.empty()) {
    absl::StrAppend(&out, "\n", Wrapped(usage.details, ""));
  }
  return out;
}

int ReportUsageError(const std::string& program, const std::string& message) {
  std::fprintf(stderr, "%s: %s (see %s --help)\n", program.c_str(),
               message.c_str(), program.c_str());
  return 2;
}

std::vector<std::string> ParseCommandLine(
    const std::vector<std::string>& arguments, const CommandUsage& usage) {
  absl::StatusOr<ParsedArguments> parsed = ParseArguments(arguments, usage);
  if (!parsed.ok()) {
    std::exit(
        ReportUsageError(usage.name, std::string(parsed.status().message())));
  }
  if (parsed->help) {
    std::fputs(HelpText(usage).c_str(), stdout);
    std::exit(0);
  }
  return parsed->positional;
}

std::vector<std::string> ParseCommandLine(int argc, char** argv,
                                          const CommandUsage& usage) {
  return ParseCommandLine(std::vector<std::string>(argv + 1, argv + argc),
                          usage);
}

void ParseFlagsOnly(int argc, char** argv, const CommandUsage& usage) {
  const std::vector<std::string> positional =
      ParseCommandLine(argc, argv, usage);
  if (!positional.empty()) {
    std::exit(ReportUsageError(usage.name,
                               "unexpected argument '" + positional[0] + "'"));
  }
}

namespace {

// The payload that marks a UsageError (a status's payloads are keyed by a
// type URL).
constexpr absl::string_view kUsageErrorPayload =
    "type.streamreg.dev/streamreg.UsageError";

}  // namespace

absl::Status UsageError(absl::string_view message) {
  absl::Status status = absl::InvalidArgumentError(message);
  status.SetPayload(kUsageErrorPayload, absl::Cord());
  return status;
}

bool IsUsageError(const absl::Status& status) {
  return status.GetPayload(kUsageErrorPayload).has_value();
}

int ReportFailure(const std::string& program, const absl::Status& status) {
  if (IsUsageError(status)) {
    return ReportUsageError(program, std::string(status.message()));
  }
  std::fprintf(stderr, "%s: %s: %s\n", program.c_str(),
               absl::StatusCodeToString(status.code()).c_str(),
               std::string(status.message()).c_str());
  return 1;
}

}  // namespace streamreg
