#include "tests/support/nats_test_cluster.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "httplib.h"
#include "tests/support/fresh_directory.h"

namespace streamreg {
namespace {

// The last `count` lines of the file at `path` (fewer if it is shorter), so
// that a failure shows what a node logged before the test's temporary
// directory is removed.
std::string LastLines(const std::string& path, std::size_t count) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  const std::string whole = text.str();
  const std::vector<absl::string_view> lines =
      absl::StrSplit(absl::StripTrailingAsciiWhitespace(whole), '\n');
  const std::size_t first = lines.size() > count ? lines.size() - count : 0;
  return absl::StrJoin(lines.begin() + first, lines.end(), "\n");
}

}  // namespace

absl::StatusOr<std::unique_ptr<NatsTestCluster>> NatsTestCluster::Start(
    std::size_t nodes, absl::Duration timeout) {
  std::unique_ptr<NatsTestCluster> cluster(
      new NatsTestCluster(FreshDirectory()));
  for (std::size_t i = 0; i < nodes; ++i) {
    absl::StatusOr<ReservedPort> client = ReservedPort::Reserve();
    absl::StatusOr<ReservedPort> cluster_port = ReservedPort::Reserve();
    absl::StatusOr<ReservedPort> monitor = ReservedPort::Reserve();
    for (const auto* reserved : {&client, &cluster_port, &monitor}) {
      if (!reserved->ok()) return reserved->status();
    }
    cluster->nodes_.push_back(
        Node{.client_port = *std::move(client),
             .cluster_port = *std::move(cluster_port),
             .monitor_port = *std::move(monitor),
             .store = absl::StrCat(cluster->directory_, "/node", i),
             .log = absl::StrCat(cluster->directory_, "/node", i, ".log")});
  }
  for (std::size_t i = 0; i < nodes; ++i) {
    if (absl::Status launched = cluster->Launch(i); !launched.ok()) {
      return launched;
    }
  }
  for (std::size_t i = 0; i < nodes; ++i) {
    if (absl::Status healthy = cluster->WaitHealthy(i, timeout);
        !healthy.ok()) {
      return healthy;
    }
  }
  return cluster;
}

NatsTestCluster::~NatsTestCluster() {
  for (std::size_t i = 0; i < nodes_.size(); ++i) Stop(i);
}

std::vector<std::string> NatsTestCluster::urls() const {
  std::vector<std::string> urls;
  for (const Node& node : nodes_) {
    urls.push_back(absl::StrCat("nats://127.0.0.1:", node.client_port.port()));
  }
  return urls;
}

absl::Status NatsTestCluster::Launch(std::size_t i) {
  const Node& node = nodes_[i];
  std::vector<std::string> routes;
  for (const Node& other : nodes_) {
    routes.push_back(
        absl::StrCat("nats://127.0.0.1:", other.cluster_port.port()));
  }
  const std::vector<std::string> arguments = {
      STREAMREG_NATS_SERVER,
      "--jetstream",
      "--store_dir",
      node.store,
      "--addr",
      "127.0.0.1",
      "--port",
      absl::StrCat(node.client_port.port()),
      "--http_port",
      absl::StrCat(node.monitor_port.port()),
      "--server_name",
      absl::StrCat("node", i),
      "--cluster_name",
      "streamreg-test",
      "--cluster",
      absl::StrCat("nats://127.0.0.1:", node.cluster_port.port()),
      "--routes",
      absl::StrJoin(routes, ","),
      "--log",
      node.log};
  std::vector<char*> argv;
  for (const std::string& argument : arguments) {
    argv.push_back(const_cast<char*>(argument.c_str()));
  }
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError("fork");
  if (pid == 0) {
    // The node goes with the test, even one that crashes; its output is in
    // its log file.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, STDOUT_FILENO);
    dup2(null, STDERR_FILENO);
    execv(argv[0], argv.data());
    _exit(127);
  }
  nodes_[i].pid = pid;
  return absl::OkStatus();
}

absl::Status NatsTestCluster::WaitHealthy(std::size_t i, absl::Duration timeout,
                                          absl::string_view stream) const {
  const std::string stream_current =
      absl::StrCat("JetStream consumer '$G > ", stream, " > ");
  const Node& node = nodes_[i];
  httplib::Client monitor("127.0.0.1", node.monitor_port.port());
  monitor.set_connection_timeout(1);
  const absl::Time deadline = absl::Now() + timeout;
  std::string last = "no answer";
  while (absl::Now() < deadline) {
    int status = 0;
    if (waitpid(node.pid, &status, WNOHANG) == node.pid) {
      return absl::InternalError(absl::StrCat(
          "nats-server node ", i, " exited at start; see ", node.log));
    }
    // Healthy: JetStream is up and has a meta leader, and every stream it
    // holds is current.
    if (httplib::Result result = monitor.Get("/healthz")) {
      if (result->status == 200) return absl::OkStatus();
      // The body's JSON writes '>' as \u003e.
      last = absl::StrReplaceAll(result->body, {{"\\u003e", ">"}});
      if (!stream.empty() && absl::StrContains(last, stream_current)) {
        return absl::OkStatus();
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return absl::DeadlineExceededError(absl::StrCat(
      "nats-server node ", i, " not healthy: ", last, "; the end of its log, ",
      node.log, ":\n", LastLines(node.log, 30)));
}

void NatsTestCluster::Kill(std::size_t i) {
  Node& node = nodes_[i];
  if (node.pid <= 0) return;
  kill(node.pid, SIGKILL);
  waitpid(node.pid, nullptr, 0);
  node.pid = -1;
}

void NatsTestCluster::Pause(std::size_t i) {
  if (nodes_[i].pid > 0) kill(nodes_[i].pid, SIGSTOP);
}

void NatsTestCluster::Resume(std::size_t i) {
  if (nodes_[i].pid > 0) kill(nodes_[i].pid, SIGCONT);
}

absl::Status NatsTestCluster::Restart(std::size_t i, absl::Duration timeout) {
  Kill(i);
  if (absl::Status launched = Launch(i); !launched.ok()) return launched;
  return WaitHealthy(i, timeout);
}

void NatsTestCluster::Stop(std::size_t i) {
  Node& node = nodes_[i];
  if (node.pid <= 0) return;
  kill(node.pid, SIGTERM);
  kill(node.pid, SIGCONT);  // a paused node takes it
  for (int wait = 0; wait < 100; ++wait) {
    if (waitpid(node.pid, nullptr, WNOHANG) == node.pid) {
      node.pid = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  Kill(i);
}

}  // namespace streamreg
