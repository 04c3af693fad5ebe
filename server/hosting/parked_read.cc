#include "server/hosting/parked_read.h"

#include <utility>

namespace streamreg {

void PostRead(WorkerPool& pool, ParkableRead read) {
  if (!read.model->ReadWaitsForLearning(read.after)) {
    pool.Post(std::move(read.answer));
    return;
  }
  if (read.parked) read.parked();
  // Checked with the pool's lock held, every WorkerPool::kWhenPollInterval:
  // atomics and the learn stage's mutex for a moment.
  pool.PostWhen(
      [model = std::move(read.model), after = read.after,
       abandoned = std::move(read.abandoned)] {
        return !model->ReadWaitsForLearning(after) ||
               (abandoned && abandoned());
      },
      std::move(read.answer));
}

}  // namespace streamreg
