#include "core/base/realtime_priority.h"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <thread>

#include "core/base/background_thread.h"
#include "gtest/gtest.h"
#include "tests/support/sys_nice.h"

namespace streamreg {
namespace {

// The calling thread's scheduling: its policy and real-time priority.
struct Scheduling {
  int policy = -1;
  int priority = -1;
};
Scheduling OfCallingThread() {
  Scheduling scheduling;
  scheduling.policy = sched_getscheduler(0);
  sched_param param{};
  if (sched_getparam(0, &param) == 0)
    scheduling.priority = param.sched_priority;
  return scheduling;
}

// Its nice value (per thread on Linux).
int NiceOfCallingThread() {
  errno = 0;
  const int nice =
      getpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)));
  EXPECT_EQ(errno, 0);
  return nice;
}

std::string NameOfCallingThread() {
  char name[16] = {};
  EXPECT_EQ(pthread_getname_np(pthread_self(), name, sizeof name), 0);
  return name;
}

// Runs `body` on a thread of its own and waits for it (what a test does to
// a thread's scheduling then dies with it).
template <class Body>
void OnAThreadOfItsOwn(Body body) {
  std::thread thread(body);
  thread.join();
}

constexpr int kPriority = 3;

bool Permitted() { return CheckRealtimePriority(kPriority).ok(); }

TEST(RealtimePriorityTest, PrioritiesOutsideOneTo99AreRefusedAndChangeNothing) {
  OnAThreadOfItsOwn([] {
    for (const int priority : {0, -1, 100}) {
      const absl::Status status = EnterRealtime(priority);
      EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << priority;
      EXPECT_NE(status.message().find("1..99"), std::string::npos) << status;
      EXPECT_EQ(OfCallingThread().policy, SCHED_OTHER);
    }
  });
}

TEST(RealtimePriorityTest, AThreadEntersAndLeavesKeepingItsNiceValue) {
  if (!Permitted()) GTEST_SKIP() << "SCHED_FIFO is not permitted here";
  OnAThreadOfItsOwn([] {
    const int nice = std::min(19, NiceOfCallingThread() + 5);
    ASSERT_EQ(
        setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), nice),
        0);
    ASSERT_TRUE(EnterRealtime(kPriority).ok());
    EXPECT_EQ(OfCallingThread().policy, SCHED_FIFO);
    EXPECT_EQ(OfCallingThread().priority, kPriority);
    LeaveRealtime();
    EXPECT_EQ(OfCallingThread().policy, SCHED_OTHER);
    EXPECT_EQ(OfCallingThread().priority, 0);
    EXPECT_EQ(NiceOfCallingThread(), nice);
    LeaveRealtime();  // not real-time: nothing
    EXPECT_EQ(OfCallingThread().policy, SCHED_OTHER);
  });
}

TEST(RealtimePriorityTest, ThreadsStartedInTheScopeInheritItButBackgroundOnes) {
  if (!Permitted()) GTEST_SKIP() << "SCHED_FIFO is not permitted here";
  OnAThreadOfItsOwn([] {
    Scheduling library, background;
    std::string background_name;
    {
      const ScopedRealtime realtime(kPriority);
      ASSERT_TRUE(realtime.status().ok()) << realtime.status();
      EXPECT_EQ(OfCallingThread().policy, SCHED_FIFO);
      OnAThreadOfItsOwn([&] { library = OfCallingThread(); });
      OnAThreadOfItsOwn([&] {
        BeginBackgroundThread("tree-rebuild");
        background = OfCallingThread();
        background_name = NameOfCallingThread();
      });
    }
    EXPECT_EQ(OfCallingThread().policy, SCHED_OTHER);
    EXPECT_EQ(library.policy, SCHED_FIFO);
    EXPECT_EQ(library.priority, kPriority);
    EXPECT_EQ(background.policy, SCHED_OTHER);
    EXPECT_EQ(background_name, "tree-rebuild");
  });
}

TEST(RealtimePriorityTest, PriorityZeroIsNormalScheduling) {
  OnAThreadOfItsOwn([] {
    const ScopedRealtime none(0);
    EXPECT_TRUE(none.status().ok());
    EXPECT_EQ(OfCallingThread().policy, SCHED_OTHER);
  });
}

TEST(RealtimePriorityTest, BackgroundThreadNamesKeepTheirFirst15Bytes) {
  OnAThreadOfItsOwn([] {
    BeginBackgroundThread("a-name-longer-than-fifteen-bytes");
    EXPECT_EQ(NameOfCallingThread(), "a-name-longer-t");
  });
}

TEST(RealtimePriorityTest, WithoutThePrivilegeItIsRefusedNamingWhatGrantsIt) {
  rlimit limit{};
  ASSERT_EQ(getrlimit(RLIMIT_RTPRIO, &limit), 0);
  if (limit.rlim_cur >= static_cast<rlim_t>(kPriority)) {
    GTEST_SKIP() << "RLIMIT_RTPRIO grants priority " << kPriority;
  }
  OnAThreadOfItsOwn([] {
    ASSERT_TRUE(DropSysNiceOnThisThread());
    const absl::Status checked = CheckRealtimePriority(kPriority);
    EXPECT_EQ(checked.code(), absl::StatusCode::kPermissionDenied) << checked;
    for (const char* names : {"CAP_SYS_NICE", "RLIMIT_RTPRIO", "SYS_NICE"}) {
      EXPECT_NE(checked.message().find(names), std::string::npos) << checked;
    }
    const ScopedRealtime refused(kPriority);
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kPermissionDenied);
    EXPECT_EQ(OfCallingThread().policy, SCHED_OTHER);
  });
}

}  // namespace
}  // namespace streamreg
