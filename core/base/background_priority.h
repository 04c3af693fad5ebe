#ifndef STREAMREG_CORE_BASE_BACKGROUND_PRIORITY_H_
#define STREAMREG_CORE_BASE_BACKGROUND_PRIORITY_H_

namespace streamreg {

// Lowers the calling thread's scheduling priority (nice +10, Linux
// per-thread), for background work — writing snapshots, MLKR's batch fits
// — that must yield the cores to learning and predictions. Best effort: does
// nothing where not permitted.
void LowerThreadPriority();

}  // namespace streamreg

#endif  // STREAMREG_CORE_BASE_BACKGROUND_PRIORITY_H_
