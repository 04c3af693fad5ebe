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

int LoweredNice(int nice) { return std::min(19, nice + kLoweredBy); }

namespace {

// Lowers `thread` (LoweredNice); its nice value before, if it was lowered.
std::optional<int> Lower(pid_t thread) {
  const std::optional<int> normal = NiceOf(thread);
  if (!normal.has_value() || LoweredNice(*normal) == *normal ||
      setpriority(PRIO_PROCESS, static_cast<id_t>(thread),
                  LoweredNice(*normal)) != 0) {
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

void RaisablePriority::LowerCallingThread() {
  MutexLock lock(&mutex_);
  if (!armed_ || wanted_) return;
  const pid_t thread = CallingThread();
  if (const std::optional<int> normal = Lower(thread); normal.has_value()) {
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
