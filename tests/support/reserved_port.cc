#include "tests/support/reserved_port.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <random>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace streamreg {
namespace {

constexpr int kLowestPort = 10000;
constexpr int kAttempts = 1000;

// The first port the kernel hands out by itself (ip_local_port_range):
// ports below it are ours to choose.
int FirstEphemeralPort() {
  std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
  int first = 0;
  if (range >> first && first > kLowestPort + 1000) return first;
  return 32768;
}

// Whether a listening socket could bind 127.0.0.1:port now.
bool CanBind(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  const int on = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok =
      bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  close(fd);
  return ok;
}

// An exclusive lock on the port's file, or -1 if another test holds it.
int LockPortFile(int port) {
  const std::string directory = "/tmp/streamreg-test-ports";
  mkdir(directory.c_str(), 01777);
  const std::string path = absl::StrCat(directory, "/", port);
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) return -1;
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

absl::StatusOr<ReservedPort> ReservedPort::Reserve() {
  static thread_local std::mt19937 random(std::random_device{}());
  std::uniform_int_distribution<int> ports(kLowestPort,
                                           FirstEphemeralPort() - 1);
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    const int port = ports(random);
    const int lock_fd = LockPortFile(port);
    if (lock_fd < 0) continue;
    if (CanBind(port)) return ReservedPort(port, lock_fd);
    close(lock_fd);
  }
  return absl::ResourceExhaustedError(
      absl::StrCat("no free loopback port below the ephemeral range after ",
                   kAttempts, " attempts"));
}

ReservedPort::ReservedPort(ReservedPort&& other) noexcept
    : port_(std::exchange(other.port_, 0)),
      lock_fd_(std::exchange(other.lock_fd_, -1)) {}

ReservedPort& ReservedPort::operator=(ReservedPort&& other) noexcept {
  if (this != &other) {
    if (lock_fd_ >= 0) close(lock_fd_);
    port_ = std::exchange(other.port_, 0);
    lock_fd_ = std::exchange(other.lock_fd_, -1);
  }
  return *this;
}

ReservedPort::~ReservedPort() {
  if (lock_fd_ >= 0) close(lock_fd_);
}

}  // namespace streamreg
