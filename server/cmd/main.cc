// streamreg-server: hosts streamreg models over gRPC until SIGTERM/SIGINT,
// then drains and exits 0. SIGHUP rereads the --auth_tokens file.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/synchronization/mutex.h"
#include "common/command_line.h"
#include "server/cmd/allocator_tuning.h"
#include "server/cmd/server_flags.h"
#include "server/rpc/server.h"
#include "server/telemetry/logging.h"
#include "spdlog/spdlog.h"

namespace streamreg {
namespace {

int signal_pipe[2] = {-1, -1};

void OnSignal(int signal_number) {
  const int saved_errno = errno;
  [[maybe_unused]] const ssize_t written =
      write(signal_pipe[1], &signal_number, sizeof signal_number);
  errno = saved_errno;
}

// SIGHUP: the --auth_tokens file again. A file that does not parse leaves
// the tokens as they were (refusing everyone would stop the robots).
void ReloadAccessTokens(Server& server) {
  const std::string path = absl::GetFlag(FLAGS_auth_tokens);
  if (path.empty()) {
    spdlog::info("event=sighup_ignored reason=\"no --auth_tokens\"");
    return;
  }
  absl::StatusOr<AccessTokens> tokens = AccessTokens::Load(path);
  if (!tokens.ok()) {
    spdlog::error("event=auth_tokens_reload_failed error=\"{}\"",
                  std::string(tokens.status().message()));
    return;
  }
  const std::size_t holders = tokens->size();
  server.ReplaceAccessTokens(*std::move(tokens));
  spdlog::info("event=auth_tokens_reloaded token_holders={}", holders);
}

int Main() {
  TuneAllocatorForServer();
  // Debian's Abseil is built as for debugging, so absl::Mutex looks for
  // lock-order cycles on every lock it takes while another is held (a
  // graph update each time) — gRPC's locks are absl::Mutex. Off: a
  // debugging aid, about a fiftieth of the completion queue thread's CPU.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  if (absl::Status status = SetUpLogging(absl::GetFlag(FLAGS_log_level),
                                         absl::GetFlag(FLAGS_log_format));
      !status.ok()) {
    std::fprintf(stderr, "streamreg-server: %s\n",
                 std::string(status.message()).c_str());
    return 2;
  }
  // SIGTERM/SIGINT/SIGHUP, whichever thread they arrive on, are written to
  // a pipe the main thread waits on (gRPC may have started threads already).
  if (pipe2(signal_pipe, O_CLOEXEC) != 0) {
    std::perror("streamreg-server: pipe");
    return 1;
  }
  struct sigaction action = {};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGHUP, &action, nullptr);

  absl::StatusOr<ServerOptions> options = ServerOptionsFromFlags();
  if (!options.ok()) {
    std::fprintf(stderr, "streamreg-server: %s\n",
                 std::string(options.status().message()).c_str());
    return 2;
  }
  absl::StatusOr<std::unique_ptr<Server>> server =
      Server::Start(*std::move(options));
  if (!server.ok()) {
    spdlog::error("event=start_failed error=\"{}\"",
                  std::string(server.status().message()));
    return 1;
  }
  // The lines scripts and tests wait for (the listening one last).
  if (const std::string metrics = (*server)->metrics_address();
      !metrics.empty()) {
    std::printf("streamreg-server metrics on http://%s/metrics\n",
                metrics.c_str());
  }
  if (const std::string socket = (*server)->local_socket_address();
      !socket.empty()) {
    std::printf("streamreg-server local socket %s\n", socket.c_str());
  }
  std::printf("streamreg-server listening on %s\n",
              (*server)->address().c_str());
  std::fflush(stdout);
  for (;;) {
    int signal_number = 0;
    const ssize_t got =
        read(signal_pipe[0], &signal_number, sizeof signal_number);
    if (got < 0 && errno == EINTR) continue;
    if (got == sizeof signal_number && signal_number == SIGHUP) {
      ReloadAccessTokens(**server);
      continue;
    }
    spdlog::info("event=signal signal={}", strsignal(signal_number));
    break;
  }
  (*server)->Shutdown();
  return 0;
}

}  // namespace
}  // namespace streamreg

int main(int argc, char** argv) {
  const streamreg::CommandUsage usage = {
      .name = "streamreg-server",
      .synopsis =
          "[--listen HOST:PORT] [--data-dir DIR] [--config FILE] "
          "[flags]",
      .summary =
          "Hosts streamreg models over gRPC (streamreg.v1 ModelService and "
          "RegressionService, grpc.health.v1, reflection) until SIGTERM or "
          "SIGINT, then drains and exits 0. Every write is in the model's "
          "write-ahead log before it is acknowledged; models are recovered "
          "from the data directory at start. SIGHUP rereads --auth-tokens.",
      .flags = streamreg::FlagsDefinedIn({"server/cmd/server_flags.cc"}),
      .examples = {"streamreg-server --listen 127.0.0.1:50051 --data-dir "
                   "streamreg-data",
                   "streamreg-server --listen 0.0.0.0:50051 --sync interval:5 "
                   "--tls-cert server.pem --tls-key server.key"},
      .config_file = true,
  };
  streamreg::ParseFlagsOnly(argc, argv, usage);
  return streamreg::Main();
}
