#ifndef STREAMREG_TESTS_SUPPORT_DELAYING_PROXY_H_
#define STREAMREG_TESTS_SUPPORT_DELAYING_PROXY_H_

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/base/mutex.h"

namespace streamreg {

// A slow link for the cluster tests: a TCP proxy on a loopback port that
// forwards every connection to `target` ("host:port") and delivers each
// chunk of bytes, both ways, `delay` after it arrived (latency, not a
// bandwidth cap: chunks in flight overlap). Put in front of one NATS node,
// it is the slow link of an operator's cluster. Stops, closing every
// connection, when it goes.
class DelayingProxy {
 public:
  static absl::StatusOr<std::unique_ptr<DelayingProxy>> Start(
      const std::string& target, absl::Duration delay);
  ~DelayingProxy();
  DelayingProxy(const DelayingProxy&) = delete;
  DelayingProxy& operator=(const DelayingProxy&) = delete;

  // "host:port" to connect to instead of the target.
  std::string address() const;

 private:
  DelayingProxy(int listener, int port, std::string target_host,
                int target_port, absl::Duration delay)
      : listener_(listener),
        port_(port),
        target_host_(std::move(target_host)),
        target_port_(target_port),
        delay_(delay) {}

  void Accept();
  // Forwards `from` to `to`, each chunk `delay_` after it was read, until
  // either side closes; then shuts both down.
  void Pump(int from, int to);

  const int listener_;
  const int port_;
  const std::string target_host_;
  const int target_port_;
  const absl::Duration delay_;
  std::atomic<bool> stopping_{false};
  Mutex mutex_;
  std::vector<int> sockets_ ABSL_GUARDED_BY(mutex_);
  std::vector<std::thread> pumps_ ABSL_GUARDED_BY(mutex_);
  std::thread acceptor_;
};

}  // namespace streamreg

#endif  // STREAMREG_TESTS_SUPPORT_DELAYING_PROXY_H_
