#include "core/base/background_priority.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <future>
#include <optional>
#include <thread>

namespace streamreg {
namespace {

pid_t CallingThread() { return static_cast<pid_t>(syscall(SYS_gettid)); }

// A thread's nice value, if it can be read.
std::optional<int> NiceOf(pid_t thread) {
  errno = 0;
  const int nice = getpriority(PRIO_PROCESS, static_cast<id_t>(thread));
  if (errno != 0) return std::nullopt;
  return nice;
}

}  // namespace

int LoweredNice(int nice, int by) { return std::min(19, nice + by); }

namespace {

// Lowers `thread` to LoweredNice(normal, by), `normal` being the nice value
// it started with (its own now, if not given); returns that, if it lowered
// it.
std::optional<int> Lower(pid_t thread, int by = kLoweredBy,
                         std::optional<int> normal = std::nullopt) {
  const std::optional<int> before = NiceOf(thread);
  if (!normal.has_value()) normal = before;
  if (!normal.has_value() || !before.has_value() ||
      LoweredNice(*normal, by) <= *before ||
      setpriority(PRIO_PROCESS, static_cast<id_t>(thread),
                  LoweredNice(*normal, by)) != 0) {
    return std::nullopt;
  }
  return normal;
}

}  // namespace

void LowerThreadPriority() { (void)Lower(CallingThread()); }

bool LoweredThreadsCanBeRaised() {
  RaisablePriority priority;
  priority.Arm();
  std::promise<void> lowered, raised;
  std::thread probe([&] {
    priority.LowerCallingThread();
    lowered.set_value();
    raised.get_future().wait();
    priority.Done();
  });
  lowered.get_future().wait();
  const bool can = priority.Raise();
  raised.set_value();
  probe.join();
  return can;
}

void RaisablePriority::Arm() {
  MutexLock lock(&mutex_);
  armed_ = true;
  wanted_ = false;
  job_refused_ = false;
  thread_ = 0;
}

void RaisablePriority::LowerCallingThread(int by) {
  MutexLock lock(&mutex_);
  if (!armed_ || wanted_) return;
  const pid_t thread = CallingThread();
  // Lowered before: from the priority it started with.
  const std::optional<int> started =
      thread_ == thread ? std::optional<int>(normal_) : std::nullopt;
  if (const std::optional<int> normal = Lower(thread, by, started);
      normal.has_value()) {
    thread_ = thread;
    normal_ = *normal;
  }
}

bool RaisablePriority::Raise() {
  MutexLock lock(&mutex_);
  if (!armed_) return true;
  if (wanted_) return !job_refused_;
  wanted_ = true;
  if (thread_ == 0) {  // not lowered yet: it will not be
    ++raised_;
    return true;
  }
  const bool done =
      setpriority(PRIO_PROCESS, static_cast<id_t>(thread_), normal_) == 0;
  thread_ = 0;
  // EACCES (or EPERM) without the privilege to lower a nice value.
  ++(done ? raised_ : refused_);
  job_refused_ = !done;
  return done;
}

void RaisablePriority::Done() {
  MutexLock lock(&mutex_);
  armed_ = false;
  thread_ = 0;
}

std::uint64_t RaisablePriority::raised() const {
  MutexLock lock(&mutex_);
  return raised_;
}

std::uint64_t RaisablePriority::refused() const {
  MutexLock lock(&mutex_);
  return refused_;
}

}  // namespace streamreg
