#include "server/hosting/parked_read.h"

#include <utility>

namespace streamreg {

bool ParkedReadCheck::Waits() {
  while (done_ < reads_.size() &&
         !reads_[done_].model->ReadWaitsForLearning(reads_[done_].after)) {
    ++done_;
  }
  return done_ < reads_.size();
}

void PostRead(WorkerPool& pool, ParkableRead read) {
  auto check = std::make_shared<ParkedReadCheck>(std::move(read.reads));
  if (!check->Waits()) {
    pool.Post(std::move(read.answer));
    return;
  }
  if (read.parked) read.parked();
  // Checked with the pool's lock held (one check at a time), every
  // WorkerPool::kWhenPollInterval: atomics and the learn stage's mutex for
  // a moment.
  pool.PostWhen(
      [check = std::move(check), abandoned = std::move(read.abandoned)] {
        return !check->Waits() || (abandoned && abandoned());
      },
      std::move(read.answer));
}

}  // namespace streamreg
