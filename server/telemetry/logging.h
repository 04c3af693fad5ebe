#ifndef STREAMREG_SERVER_TELEMETRY_LOGGING_H_
#define STREAMREG_SERVER_TELEMETRY_LOGGING_H_

#include <string>

#include "absl/status/status.h"

namespace streamreg {

// Structured logs to stderr through spdlog: one event per line,
// "<UTC time> level=<level> event=<name> key=value ..." (logfmt), or
// with format "json" one JSON object per line whose "msg" holds the
// key=value pairs. `level`: trace, debug, info, warn, error, off.
absl::Status SetUpLogging(const std::string& level, const std::string& format);

}  // namespace streamreg

#endif  // STREAMREG_SERVER_TELEMETRY_LOGGING_H_
