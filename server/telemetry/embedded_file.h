#ifndef STREAMREG_SERVER_TELEMETRY_EMBEDDED_FILE_H_
#define STREAMREG_SERVER_TELEMETRY_EMBEDDED_FILE_H_

#include <span>
#include <string_view>

namespace streamreg {

// A file compiled into the binary (cmake/EmbedFiles.cmake writes the
// table), served over HTTP at `path`.
struct EmbeddedFile {
  std::string_view path;
  std::string_view content_type;
  std::string_view body;
};

// The status page's files: "/" (the HTML), its script and its style sheet
// (server/telemetry/status_page/).
std::span<const EmbeddedFile> StatusPageFiles();

}  // namespace streamreg

#endif  // STREAMREG_SERVER_TELEMETRY_EMBEDDED_FILE_H_
