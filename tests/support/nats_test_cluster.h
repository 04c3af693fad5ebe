#ifndef STREAMREG_TESTS_SUPPORT_NATS_TEST_CLUSTER_H_
#define STREAMREG_TESTS_SUPPORT_NATS_TEST_CLUSTER_H_

#include <sys/types.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "tests/support/reserved_port.h"

namespace streamreg {

// A real NATS cluster for the cluster tests: `nodes` nats-server processes
// (Debian's, STREAMREG_NATS_SERVER) with JetStream, clustered with each
// other on loopback ports reserved for it (ReservedPort), each storing in its
// own folder of a fresh directory. A node can be killed (SIGKILL, as a crash)
// and restarted on the same ports with the same store. Every node still running
// is stopped when the cluster goes; the files stay for the test's temporary
// directory.
class NatsTestCluster {
 public:
  // Starts the nodes and waits (at most `timeout`) until every one reports
  // JetStream healthy.
  static absl::StatusOr<std::unique_ptr<NatsTestCluster>> Start(
      std::size_t nodes = 3, absl::Duration timeout = absl::Seconds(30));
  ~NatsTestCluster();
  NatsTestCluster(const NatsTestCluster&) = delete;
  NatsTestCluster& operator=(const NatsTestCluster&) = delete;

  // nats://127.0.0.1:PORT of every node (running or not), for clients.
  std::vector<std::string> urls() const;
  std::size_t size() const { return nodes_.size(); }
  bool running(std::size_t node) const { return nodes_[node].pid > 0; }

  // kill -9, and waits for the process to be gone.
  void Kill(std::size_t node);
  // SIGSTOP and SIGCONT: a node that stops answering without closing its
  // connections (a stop-the-world stall, a VM migrating), then goes on.
  void Pause(std::size_t node);
  void Resume(std::size_t node);
  // SIGTERM (kill -9 after 5 s): a node shut down for maintenance, which
  // tells the others it is going (they place no new stream on it).
  void Stop(std::size_t node);
  // Starts a killed or stopped node again and waits until it reports JetStream
  // healthy.
  absl::Status Restart(std::size_t node,
                       absl::Duration timeout = absl::Seconds(30));
  // Waits until `node` reports JetStream healthy: a meta leader, and every
  // stream it holds current (a node resumed after a pause has caught up).
  // With `stream`, only that stream current: nats-server checks a stream
  // before its consumers, so an answer that one of its consumers is not
  // current (an ephemeral one left over from a pause may stay so for
  // good) says the stream is.
  absl::Status WaitHealthy(std::size_t node, absl::Duration timeout,
                           absl::string_view stream = {}) const;

 private:
  struct Node {
    ReservedPort client_port;
    ReservedPort cluster_port;
    ReservedPort monitor_port;
    std::string store;
    std::string log;
    pid_t pid = -1;
  };

  explicit NatsTestCluster(std::string directory)
      : directory_(std::move(directory)) {}
  absl::Status Launch(std::size_t node);

  std::string directory_;
  std::vector<Node> nodes_;
};

}  // namespace streamreg

#endif  // STREAMREG_TESTS_SUPPORT_NATS_TEST_CLUSTER_H_
