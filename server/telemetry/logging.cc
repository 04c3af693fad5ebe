#include "server/telemetry/logging.h"

#include "absl/strings/str_cat.h"
#include "spdlog/sinks/stdout_sinks.h"
#include "spdlog/spdlog.h"

namespace streamreg {

absl::Status SetUpLogging(const std::string& level, const std::string& format) {
  const spdlog::level::level_enum parsed = spdlog::level::from_str(level);
  if (parsed == spdlog::level::off && level != "off") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--log-level: unknown level '", level,
        "' (expected one of trace, debug, info, warn, error, off)"));
  }
  std::string pattern;
  if (format == "text") {
    pattern = "%Y-%m-%dT%H:%M:%S.%fZ level=%l %v";
  } else if (format == "json") {
    pattern = R"({"time":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l","msg":"%v"})";
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--log-format: unknown format '", format,
                     "' (expected one of text, json)"));
  }
  auto logger = spdlog::stderr_logger_mt("streamreg");
  logger->set_pattern(pattern, spdlog::pattern_time_type::utc);
  logger->set_level(parsed);
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
  return absl::OkStatus();
}

}  // namespace streamreg
