#include "server/telemetry/metrics_http_server.h"

#include <sys/socket.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <string>
#include <string_view>
#include <thread>

#include "absl/strings/str_cat.h"
#include "core/base/background_thread.h"
#include "httplib.h"

namespace streamreg {
namespace {

constexpr char kContentType[] = "text/plain; version=0.0.4; charset=utf-8";

// Splits "host:port" (the host of "[::1]:9464" without its brackets).
absl::Status SplitHostPort(const std::string& listen, std::string* host,
                           int* port) {
  const std::size_t colon = listen.rfind(':');
  const auto invalid = [&] {
    return absl::InvalidArgumentError(absl::StrCat(
        "--metrics_listen ", listen,
        ": expected HOST:PORT (port 0: any free port; empty: no metrics)"));
  };
  if (colon == std::string::npos || colon == 0) return invalid();
  *host = listen.substr(0, colon);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']') {
    *host = host->substr(1, host->size() - 2);
  }
  const char* first = listen.data() + colon + 1;
  const char* last = listen.data() + listen.size();
  const auto [end, error] = std::from_chars(first, last, *port);
  if (error != std::errc() || end != last || first == last || *port < 0 ||
      *port > 65535) {
    return invalid();
  }
  return absl::OkStatus();
}

// Where the page's HTML takes its first data (StatusPage::first_report).
constexpr std::string_view kFirstReportSlot =
    R"(<script id="first-report" type="application/json">)";

// `html` with `report` (JSON) inside its first-report element. Every "<"
// of the JSON (only ever inside a string) is written \u003c, so that no
// "</script>" or "<!--" in a model's name or error can end the element.
std::string WithFirstReport(std::string_view html, std::string_view report) {
  const std::size_t slot = html.find(kFirstReportSlot);
  if (slot == std::string_view::npos) return std::string(html);
  const std::size_t at = slot + kFirstReportSlot.size();
  std::string page(html.substr(0, at));
  page.reserve(html.size() + report.size() + 64);
  for (char c : report) {
    if (c == '<') {
      page += "\\u003c";
    } else {
      page += c;
    }
  }
  page += html.substr(at);
  return page;
}

// The page's files and its data. Neither may be cached: the files change
// with the binary, the data every second.
void ServeStatusPage(MetricsHttpServer::StatusPage page,
                     httplib::Server& http) {
  for (const EmbeddedFile& file : page.files) {
    if (file.path == "/" && page.first_report) {
      http.Get("/", [file, report = page.first_report](const httplib::Request&,
                                                       httplib::Response& res) {
        res.set_header("Cache-Control", "no-store");
        res.set_content(WithFirstReport(file.body, report()),
                        std::string(file.content_type));
      });
      continue;
    }
    http.Get(std::string(file.path),
             [file](const httplib::Request&, httplib::Response& res) {
               res.set_header("Cache-Control", "no-store");
               res.set_content(file.body.data(), file.body.size(),
                               std::string(file.content_type));
             });
  }
  http.Get("/api/status",
           [json = std::move(page.json)](const httplib::Request& req,
                                         httplib::Response& res) {
             std::optional<std::string> detail;
             if (req.has_param("detail"))
               detail = req.get_param_value("detail");
             res.set_header("Cache-Control", "no-store");
             res.set_content(json(detail), "application/json");
           });
}

}  // namespace

struct MetricsHttpServer::Impl {
  httplib::Server http;
  std::thread thread;
  std::atomic<bool> finished{false};
};

MetricsHttpServer::MetricsHttpServer(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(
    const std::string& listen, Render render,
    std::optional<StatusPage> status_page) {
  std::string host;
  int port = 0;
  if (absl::Status status = SplitHostPort(listen, &host, &port); !status.ok()) {
    return status;
  }
  auto impl = std::make_unique<Impl>();
  httplib::Server& http = impl->http;
  http.new_task_queue = [] { return new httplib::ThreadPool(2); };
  // SO_REUSEADDR (a restart may bind while old connections linger) but not
  // cpp-httplib's default SO_REUSEPORT, under which a second server would
  // share the port and answer half the scrapes.
  http.set_socket_options([](socket_t socket) {
    int yes = 1;
    setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  http.set_read_timeout(std::chrono::seconds(5));
  http.set_keep_alive_timeout(30);
  http.Get("/metrics", [render = std::move(render)](const httplib::Request&,
                                                    httplib::Response& res) {
    res.set_content(render(), kContentType);
  });
  if (status_page.has_value()) {
    ServeStatusPage(*std::move(status_page), http);
  } else {
    http.Get("/", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(
          "streamreg-server: Prometheus metrics at /metrics (the status "
          "page is off: --status_page=false)\n",
          "text/plain; charset=utf-8");
    });
  }
  if (port == 0) {
    port = http.bind_to_any_port(host);
  } else if (!http.bind_to_port(host, port)) {
    port = -1;
  }
  if (port <= 0) {
    return absl::UnavailableError(absl::StrCat(
        "--metrics_listen ", listen,
        ": cannot listen there (the port is in use or the host is not an "
        "address of this machine; --metrics_listen= serves no metrics)"));
  }
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] {
    BeginBackgroundThread("metrics-http");
    raw->http.listen_after_bind();
    raw->finished = true;
  });
  // stop() only takes effect once the server runs: wait for that.
  while (!http.is_running() && !impl->finished) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::unique_ptr<MetricsHttpServer> server(
      new MetricsHttpServer(std::move(impl)));
  server->host_ = listen.substr(0, listen.rfind(':'));
  server->port_ = port;
  return server;
}

MetricsHttpServer::~MetricsHttpServer() {
  impl_->http.stop();
  impl_->thread.join();
}

std::string MetricsHttpServer::address() const {
  return absl::StrCat(host_, ":", port_);
}

}  // namespace streamreg
