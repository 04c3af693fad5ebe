#ifndef STREAMREG_CORE_BASE_BACKGROUND_PRIORITY_H_
#define STREAMREG_CORE_BASE_BACKGROUND_PRIORITY_H_

#include <sys/types.h>

#include <cstdint>

#include "core/base/mutex.h"

namespace streamreg {

// How far background threads are lowered: nice + 10 (Linux: per thread),
// at most to 19.
inline constexpr int kLoweredBy = 10;
int LoweredNice(int nice, int by = kLoweredBy);

// Lowers the calling thread's scheduling priority (LoweredNice), for
// background work — writing snapshots — that must yield the cores to
// learning and predictions. Best effort: does nothing where not permitted.
void LowerThreadPriority();

// Whether this process may bring a thread it lowered back to its own
// priority (what RaisablePriority::Raise needs: CAP_SYS_NICE, or an
// RLIMIT_NICE of at least 20 - the process's nice value). Tried on a
// thread of its own.
bool LoweredThreadsCanBeRaised();

// The priority of a background job (one at a time) whose result something
// may come to wait for — an MLKR fit, which a learner waits for at its
// take-over point, and a read after what was acknowledged waits for the
// learner. The job runs lowered (LoweredNice) so that it yields the
// cores to learning and predictions; once a read waits on it (through the
// learner), Raise() brings its thread back to the priority it started
// with: priority inheritance, for that job only. Raising a nice value back
// needs the privilege LoweredThreadsCanBeRaised() tests; without it the
// job stays lowered and the refusal is counted. Thread-safe.
class RaisablePriority {
 public:
  // By the job's owner, before its thread starts: a new job, not raised.
  void Arm();
  // On the job's thread as it starts: lowers it (by `by`: LoweredNice),
  // unless Raise() came first. Called again on the job's thread, it
  // lowers it further; Raise() still brings back the priority it started
  // with.
  void LowerCallingThread(int by = kLoweredBy);
  // From any thread: the job's thread at its starting priority from now on
  // (a job lowered and raised, or not lowered yet). False if the system
  // refused; true otherwise, and when no job runs.
  bool Raise();
  // On the job's thread as it ends: nothing to raise until the next Arm()
  // (the thread's id may be reused).
  void Done();

  // Jobs raised, and raises the system refused.
  std::uint64_t raised() const;
  std::uint64_t refused() const;

 private:
  mutable Mutex mutex_;
  bool armed_ ABSL_GUARDED_BY(mutex_) = false;   // a job is running
  bool wanted_ ABSL_GUARDED_BY(mutex_) = false;  // Raise() for this job
  bool job_refused_ ABSL_GUARDED_BY(mutex_) = false;
  pid_t thread_ ABSL_GUARDED_BY(mutex_) = 0;  // lowered, not raised yet
  int normal_ ABSL_GUARDED_BY(mutex_) = 0;    // its nice value before
  std::uint64_t raised_ ABSL_GUARDED_BY(mutex_) = 0;
  std::uint64_t refused_ ABSL_GUARDED_BY(mutex_) = 0;
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_BASE_BACKGROUND_PRIORITY_H_
