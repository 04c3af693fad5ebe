#ifndef STREAMREG_TESTS_SUPPORT_TEST_SERVER_H_
#define STREAMREG_TESTS_SUPPORT_TEST_SERVER_H_

#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/lib/client.h"
#include "gtest/gtest.h"
#include "server/rpc/server.h"

namespace streamreg {

// Starts an in-process Server with `options` on a free loopback port over
// `data_dir` into *server (what every service test runs against). A server
// that does not start fails the test, and *server stays as it was.
inline void StartTestServer(ServerOptions options, const std::string& data_dir,
                            std::unique_ptr<Server>* server) {
  options.listen = "127.0.0.1:0";
  options.data_dir = data_dir;
  absl::StatusOr<std::unique_ptr<Server>> started =
      Server::Start(std::move(options));
  ASSERT_TRUE(started.ok()) << started.status();
  *server = *std::move(started);
}

// A client of `server` that fails fast: one attempt, 10 s per call.
inline ClientOptions TestClientOptions(const Server& server) {
  ClientOptions options;
  options.address = server.address();
  options.timeout = absl::Seconds(10);
  options.retry.max_attempts = 1;
  return options;
}

}  // namespace streamreg

#endif  // STREAMREG_TESTS_SUPPORT_TEST_SERVER_H_
