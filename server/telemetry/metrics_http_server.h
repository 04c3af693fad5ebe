#ifndef STREAMREG_SERVER_TELEMETRY_METRICS_HTTP_SERVER_H_
#define STREAMREG_SERVER_TELEMETRY_METRICS_HTTP_SERVER_H_

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "server/telemetry/embedded_file.h"

namespace streamreg {

// The HTTP endpoint Prometheus scrapes (--metrics_listen): GET /metrics
// answers with what `render` returns, in the text exposition format. With
// a status page, GET / serves the page (its files embedded in the binary)
// and GET /api/status what `status_page.json` returns; without one, GET / says
// where the metrics are. Anything else is 404. Served by cpp-httplib on two
// threads of its own, so a slow scraper or viewer never holds up gRPC.
class MetricsHttpServer {
 public:
  using Render = std::function<std::string()>;

  // The live page at / (docs/api.md, "The status page"): its files ("/"
  // among them), and the JSON of GET /api/status[?detail=a,b], given the
  // comma-separated models to detail (nullopt: all). The page at / comes
  // with its first data: `first_report`'s JSON inside its element
  // <script id="first-report" type="application/json">, so that it shows
  // the models before its script has asked for anything.
  struct StatusPage {
    std::span<const EmbeddedFile> files;
    std::function<std::string(const std::optional<std::string>& detail)> json;
    std::function<std::string()> first_report;
  };

  // Listens on "host:port" ("[::]:9464" for IPv6; port 0: any free port).
  // INVALID_ARGUMENT for an address that is not host:port, UNAVAILABLE if
  // it cannot be listened on (both name the flag).
  static absl::StatusOr<std::unique_ptr<MetricsHttpServer>> Start(
      const std::string& listen, Render render,
      std::optional<StatusPage> status_page = std::nullopt);
  // Stops listening and waits for requests being answered.
  ~MetricsHttpServer();

  int port() const { return port_; }
  // "host:port" with the port in use.
  std::string address() const;

 private:
  struct Impl;
  explicit MetricsHttpServer(std::unique_ptr<Impl> impl);

  std::unique_ptr<Impl> impl_;
  std::string host_;
  int port_ = 0;
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_TELEMETRY_METRICS_HTTP_SERVER_H_
