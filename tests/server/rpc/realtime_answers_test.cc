// --realtime_priority: the threads gRPC starts for the server, which answer
// Learn streams, run at SCHED_FIFO; the server's own threads do not; a
// priority the system refuses stops the start, naming the flag.
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "client/lib/client.h"
#include "client/lib/learn_session.h"
#include "core/base/realtime_priority.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/rpc/server.h"
#include "tests/support/fresh_directory.h"
#include "tests/support/service_test_support.h"
#include "tests/support/sys_nice.h"
#include "tests/support/test_server.h"

namespace streamreg {
namespace {

using ::testing::HasSubstr;

constexpr int kPriority = 3;

// One of this process's threads: its name and scheduling.
struct ThreadScheduling {
  std::string name;
  int policy = -1;
  int priority = -1;
};

std::vector<ThreadScheduling> ThreadsOfThisProcess() {
  std::vector<ThreadScheduling> threads;
  for (const auto& task :
       std::filesystem::directory_iterator("/proc/self/task")) {
    const pid_t id = std::stoi(task.path().filename().string());
    ThreadScheduling thread;
    std::ifstream(task.path() / "comm") >> thread.name;
    thread.policy = sched_getscheduler(id);
    sched_param param{};
    if (sched_getparam(id, &param) == 0) thread.priority = param.sched_priority;
    if (thread.policy >= 0) threads.push_back(thread);  // (one may have ended)
  }
  return threads;
}

TEST(RealtimeAnswersTest, GrpcThreadsAnswerAtThePriorityAndTheServersOwnDoNot) {
  if (!CheckRealtimePriority(kPriority).ok()) {
    GTEST_SKIP() << "SCHED_FIFO is not permitted here";
  }
  const std::string directory = FreshDirectory();
  std::unique_ptr<Server> server;
  ServerOptions options;
  options.realtime_priority = kPriority;
  ASSERT_NO_FATAL_FAILURE(StartTestServer(options, directory, &server));
  EXPECT_EQ(sched_getscheduler(0), SCHED_OTHER);  // the starting thread

  // A robot's stream, long enough for learning and its refreshes to run.
  Client client(TestClientOptions(*server));
  ASSERT_TRUE(client.CreateModel("arm", RowsSpec()).ok());
  const Rows rows(1500, 7);
  std::unique_ptr<LearnSession> session = client.StartLearn("arm");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    ASSERT_TRUE(session->Learn(rows.input(i), rows.target(i), i + 1).ok());
  }

  const std::set<std::string> servers_own = {
      "learning",     "requests", "reads",        "snapshots",
      "journal-sync", "mlkr-fit", "gradient-fit", "index-build",
      "tree-rebuild", "rff-fit",  "metrics-http"};
  std::set<std::string> seen_own;
  int realtime = 0;
  for (const ThreadScheduling& thread : ThreadsOfThisProcess()) {
    if (servers_own.contains(thread.name)) {
      seen_own.insert(thread.name);
      EXPECT_EQ(thread.policy, SCHED_OTHER) << thread.name;
    } else if (thread.policy == SCHED_FIFO) {
      ++realtime;
      EXPECT_EQ(thread.priority, kPriority) << thread.name;
    }
  }
  EXPECT_GT(realtime, 0) << "no thread of gRPC's runs real-time";
  for (const char* pool : {"learning", "requests", "reads", "snapshots"}) {
    EXPECT_TRUE(seen_own.contains(pool)) << pool << " threads not found";
  }
  EXPECT_TRUE(session->Close().ok());
  server.reset();
  std::filesystem::remove_all(directory);
}

TEST(RealtimeAnswersTest, APriorityTheSystemRefusesStopsTheStartNamingTheFlag) {
  rlimit limit{};
  ASSERT_EQ(getrlimit(RLIMIT_RTPRIO, &limit), 0);
  if (limit.rlim_cur >= static_cast<rlim_t>(kPriority)) {
    GTEST_SKIP() << "RLIMIT_RTPRIO grants priority " << kPriority;
  }
  const std::string directory = FreshDirectory();
  std::thread unprivileged([&] {
    ASSERT_TRUE(DropSysNiceOnThisThread());
    ServerOptions options;
    options.listen = "127.0.0.1:0";
    options.data_dir = directory;
    options.realtime_priority = kPriority;
    const absl::StatusOr<std::unique_ptr<Server>> started =
        Server::Start(std::move(options));
    ASSERT_FALSE(started.ok());
    EXPECT_EQ(started.status().code(), absl::StatusCode::kPermissionDenied);
    EXPECT_THAT(started.status().message(),
                HasSubstr("--realtime_priority 3: SCHED_FIFO priority 3 is "
                          "not permitted"));
    EXPECT_THAT(started.status().message(), HasSubstr("CAP_SYS_NICE"));
  });
  unprivileged.join();
  std::filesystem::remove_all(directory);
}

}  // namespace
}  // namespace streamreg
