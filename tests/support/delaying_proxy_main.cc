// streamreg-delaying-proxy: the tests' slow link (DelayingProxy) as a
// program, for the benchmarks that put one in front of a NATS node of a
// local cluster (bench/cluster_faults.sh). Prints "listening on
// HOST:PORT" once it forwards, then runs until SIGTERM or SIGINT.
//
//   streamreg-delaying-proxy --target 127.0.0.1:4222 --delay 50ms
#include <signal.h>

#include <cstdio>
#include <memory>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/time/time.h"
#include "tests/support/delaying_proxy.h"

ABSL_FLAG(std::string, target, "",
          "host:port (or nats://host:port) to forward every connection to");
ABSL_FLAG(absl::Duration, delay, absl::Milliseconds(50),
          "how long each chunk of bytes is held, each way");

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  // Blocked before any thread starts, so that only sigwait takes them.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  absl::StatusOr<std::unique_ptr<streamreg::DelayingProxy>> proxy =
      streamreg::DelayingProxy::Start(absl::GetFlag(FLAGS_target),
                                      absl::GetFlag(FLAGS_delay));
  if (!proxy.ok()) {
    std::fprintf(stderr, "streamreg-delaying-proxy: %s\n",
                 std::string(proxy.status().message()).c_str());
    return 2;
  }
  std::printf("listening on %s\n", (*proxy)->address().c_str());
  std::fflush(stdout);
  int signal = 0;
  sigwait(&stop, &signal);
  return 0;
}
