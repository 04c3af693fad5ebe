#include "server/hosting/parked_read.h"

#include <algorithm>
#include <utility>

namespace streamreg {
namespace {

bool AnyWaitsForLearning(const std::vector<ModelRead>& reads) {
  return std::any_of(reads.begin(), reads.end(), [](const ModelRead& read) {
    return read.model->ReadWaitsForLearning(read.after);
  });
}

}  // namespace

void PostRead(WorkerPool& pool, ParkableRead read) {
  if (!AnyWaitsForLearning(read.reads)) {
    pool.Post(std::move(read.answer));
    return;
  }
  if (read.parked) read.parked();
  // Checked with the pool's lock held, every WorkerPool::kWhenPollInterval:
  // atomics and the learn stage's mutex for a moment, per model.
  pool.PostWhen(
      [reads = std::move(read.reads), abandoned = std::move(read.abandoned)] {
        return !AnyWaitsForLearning(reads) || (abandoned && abandoned());
      },
      std::move(read.answer));
}

}  // namespace streamreg
