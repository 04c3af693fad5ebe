#include "core/base/background_priority.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <future>
#include <thread>

#include "gtest/gtest.h"
#include "tests/support/sys_nice.h"

namespace streamreg {
namespace {

pid_t CallingThread() { return static_cast<pid_t>(syscall(SYS_gettid)); }

int NiceOf(pid_t thread) {
  errno = 0;
  const int nice = getpriority(PRIO_PROCESS, static_cast<id_t>(thread));
  EXPECT_EQ(errno, 0);
  return nice;
}

// A job's thread for a test: lowers itself as a job does (and then by
// `further`, if not 0), tells its id and nice value, and ends (Done) when
// told to.
class Job {
 public:
  explicit Job(RaisablePriority* priority, int further = 0) {
    priority->Arm();
    thread_ = std::thread([this, priority, further] {
      priority->LowerCallingThread();
      if (further != 0) priority->LowerCallingThread(further);
      id_.set_value(CallingThread());
      end_.get_future().wait();
      priority->Done();
    });
    id = id_.get_future().get();
  }
  ~Job() {
    end_.set_value();
    thread_.join();
  }
  pid_t id = 0;

 private:
  std::promise<pid_t> id_;
  std::promise<void> end_;
  std::thread thread_;
};

// Whether raising a nice value back is refused to a thread without
// CAP_SYS_NICE here (RLIMIT_NICE below 20 - our nice value).
bool RlimitNiceForbidsRaising() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NICE, &limit) != 0) return false;
  return limit.rlim_cur < static_cast<rlim_t>(20 - NiceOf(CallingThread()));
}

// Whether this test runs at a nice value that can be lowered at all.
bool CanBeLowered() { return NiceOf(CallingThread()) < 19; }

TEST(RaisablePriorityTest, AJobRunsLoweredUntilRaisedThenAtItsStartingNice) {
  if (!CanBeLowered()) GTEST_SKIP() << "running at nice 19";
  const int normal = NiceOf(CallingThread());
  const int lowered = std::min(19, normal + 10);
  EXPECT_EQ(LoweredNice(normal), lowered);
  RaisablePriority priority;
  Job job(&priority);
  EXPECT_EQ(NiceOf(job.id), lowered);
  if (!LoweredThreadsCanBeRaised()) {
    EXPECT_FALSE(priority.Raise());
    EXPECT_EQ(NiceOf(job.id), lowered);
    EXPECT_EQ(priority.refused(), 1u);
    GTEST_SKIP() << "this process may not raise a nice value back";
  }
  EXPECT_TRUE(priority.Raise());
  EXPECT_EQ(NiceOf(job.id), normal);
  EXPECT_TRUE(priority.Raise());  // once per job
  EXPECT_EQ(priority.raised(), 1u);
  EXPECT_EQ(priority.refused(), 0u);
}

TEST(RaisablePriorityTest, AJobLoweredFurtherIsRaisedToItsStartingNice) {
  if (!CanBeLowered()) GTEST_SKIP() << "running at nice 19";
  const int normal = NiceOf(CallingThread());
  RaisablePriority priority;
  Job job(&priority, 19);
  EXPECT_EQ(NiceOf(job.id), 19);
  if (!LoweredThreadsCanBeRaised()) {
    GTEST_SKIP() << "this process may not raise a nice value back";
  }
  EXPECT_TRUE(priority.Raise());
  EXPECT_EQ(NiceOf(job.id), normal);
}

TEST(RaisablePriorityTest, AJobRaisedBeforeItStartsIsNeverLowered) {
  RaisablePriority priority;
  priority.Arm();
  EXPECT_TRUE(priority.Raise());
  std::promise<int> nice;
  std::thread job([&] {
    priority.LowerCallingThread();
    nice.set_value(NiceOf(CallingThread()));
    priority.Done();
  });
  EXPECT_EQ(nice.get_future().get(), NiceOf(CallingThread()));
  job.join();
  EXPECT_EQ(priority.raised(), 1u);
}

TEST(RaisablePriorityTest, NothingIsRaisedOutsideAJob) {
  RaisablePriority priority;
  EXPECT_TRUE(priority.Raise());  // never armed
  { Job job(&priority); }         // done
  EXPECT_TRUE(priority.Raise());
  EXPECT_EQ(priority.raised(), 0u);
  EXPECT_EQ(priority.refused(), 0u);
  // The next job is lowered again, the earlier Raise() notwithstanding.
  Job next(&priority);
  EXPECT_EQ(NiceOf(next.id), LoweredNice(NiceOf(CallingThread())));
}

TEST(RaisablePriorityTest, ARaiseTheSystemRefusesIsCountedAndTheJobStaysLow) {
  if (!CanBeLowered()) GTEST_SKIP() << "running at nice 19";
  if (!RlimitNiceForbidsRaising()) {
    GTEST_SKIP() << "RLIMIT_NICE lets any thread raise a nice value back";
  }
  RaisablePriority priority;
  Job job(&priority);
  std::thread unprivileged([&] {
    if (!DropSysNiceOnThisThread()) {
      ADD_FAILURE() << "could not drop CAP_SYS_NICE";
      return;
    }
    EXPECT_FALSE(priority.Raise());
    EXPECT_FALSE(priority.Raise());  // still refused, counted once
  });
  unprivileged.join();
  EXPECT_EQ(NiceOf(job.id), LoweredNice(NiceOf(CallingThread())));
  EXPECT_EQ(priority.refused(), 1u);
  EXPECT_EQ(priority.raised(), 0u);
}

}  // namespace
}  // namespace streamreg
