#include "tests/support/delaying_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <string>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace streamreg {
namespace {

// A chunk read from one side, due on the other at `due`.
struct Chunk {
  absl::Time due;
  std::string bytes;
};

bool WriteAll(int socket, const std::string& bytes) {
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n =
        send(socket, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    sent += static_cast<std::size_t>(n);
  }
  return true;
}

int ConnectTo(const std::string& host, int port) {
  const int socket_fd = socket(AF_INET, SOCK_STREAM, 0);
  if (socket_fd < 0) return -1;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  if (inet_pton(AF_INET, host.c_str(), &address.sin_addr) != 1 ||
      connect(socket_fd, reinterpret_cast<const sockaddr*>(&address),
              sizeof(address)) != 0) {
    close(socket_fd);
    return -1;
  }
  const int one = 1;
  setsockopt(socket_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return socket_fd;
}

}  // namespace

absl::StatusOr<std::unique_ptr<DelayingProxy>> DelayingProxy::Start(
    const std::string& target, absl::Duration delay) {
  const std::size_t colon = target.rfind(':');
  int target_port = 0;
  if (colon == std::string::npos ||
      !absl::SimpleAtoi(target.substr(colon + 1), &target_port)) {
    return absl::InvalidArgumentError(
        absl::StrCat("proxy target '", target, "' is not host:port"));
  }
  std::string host = target.substr(0, colon);
  if (host.rfind("nats://", 0) == 0) host = host.substr(7);
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  if (listener < 0 ||
      bind(listener, reinterpret_cast<const sockaddr*>(&address),
           sizeof(address)) != 0 ||
      listen(listener, 64) != 0 ||
      getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) !=
          0) {
    if (listener >= 0) close(listener);
    return absl::InternalError(
        absl::StrCat("proxy: cannot listen: ", std::strerror(errno)));
  }
  std::unique_ptr<DelayingProxy> proxy(new DelayingProxy(
      listener, ntohs(address.sin_port), std::move(host), target_port, delay));
  proxy->acceptor_ = std::thread([raw = proxy.get()] { raw->Accept(); });
  return proxy;
}

DelayingProxy::~DelayingProxy() {
  stopping_ = true;
  shutdown(listener_, SHUT_RDWR);
  acceptor_.join();
  close(listener_);
  std::vector<std::thread> pumps;
  {
    MutexLock lock(&mutex_);
    for (int socket_fd : sockets_) shutdown(socket_fd, SHUT_RDWR);
    pumps = std::move(pumps_);
  }
  for (std::thread& pump : pumps) pump.join();
  MutexLock lock(&mutex_);
  for (int socket_fd : sockets_) close(socket_fd);
}

std::string DelayingProxy::address() const {
  return absl::StrCat("nats://127.0.0.1:", port_);
}

void DelayingProxy::Accept() {
  while (!stopping_) {
    const int client = accept(listener_, nullptr, nullptr);
    if (client < 0) {
      if (errno == EINTR) continue;
      return;  // shut down
    }
    const int server = ConnectTo(target_host_, target_port_);
    if (server < 0) {
      close(client);
      continue;
    }
    const int one = 1;
    setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    MutexLock lock(&mutex_);
    if (stopping_) {
      close(client);
      close(server);
      return;
    }
    sockets_.push_back(client);
    sockets_.push_back(server);
    pumps_.emplace_back([this, client, server] { Pump(client, server); });
    pumps_.emplace_back([this, client, server] { Pump(server, client); });
  }
}

void DelayingProxy::Pump(int from, int to) {
  // A reader fills the queue; this thread's writer delivers each chunk
  // when it is due.
  Mutex queue_mutex;
  CondVar queued;
  std::deque<Chunk> chunks;
  bool ended = false;
  std::thread reader([&] {
    char buffer[64 * 1024];
    for (;;) {
      const ssize_t n = recv(from, buffer, sizeof(buffer), 0);
      if (n < 0 && errno == EINTR) continue;
      MutexLock lock(&queue_mutex);
      if (n <= 0) {
        ended = true;
        queued.SignalAll();
        return;
      }
      chunks.push_back({absl::Now() + delay_,
                        std::string(buffer, static_cast<std::size_t>(n))});
      queued.SignalAll();
    }
  });
  for (;;) {
    Chunk chunk;
    {
      MutexLock lock(&queue_mutex);
      while (chunks.empty() && !ended) queued.Wait(&queue_mutex);
      if (chunks.empty()) break;
      chunk = std::move(chunks.front());
      chunks.pop_front();
    }
    absl::SleepFor(chunk.due - absl::Now());
    if (!WriteAll(to, chunk.bytes)) break;
  }
  // Either side gone: the connection ends both ways.
  shutdown(from, SHUT_RDWR);
  shutdown(to, SHUT_RDWR);
  reader.join();
}

}  // namespace streamreg
