#include "server/hosting/parked_read.h"

#include <algorithm>
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
  if (read.answer_here_if_at_once &&
      std::ranges::all_of(read.reads, [](const ModelRead& model_read) {
        return model_read.model->PredictionAnswersAtOnce(model_read.after);
      })) {
    read.answer();
    return;
  }
  auto check = std::make_shared<ParkedReadCheck>(std::move(read.reads));
  if (!check->Waits()) {
    pool.Post(std::move(read.answer));
    return;
  }
  if (read.parked) read.parked();
  // The models it waits for now learn with priority until it is answered.
  std::vector<std::shared_ptr<const HostedModel>> waited_on;
  for (const ModelRead& model_read : check->reads()) {
    if (model_read.model->ReadWaitsForLearning(model_read.after)) {
      model_read.model->ReadParked(&pool);
      waited_on.push_back(model_read.model);
    }
  }
  std::function<void()> answer = [answer = std::move(read.answer),
                                  waited_on = std::move(waited_on), &pool] {
    for (const auto& model : waited_on) model->ReadUnparked(&pool);
    answer();
  };
  // Checked with the pool's lock held (one check at a time) as each batch
  // is learned on the models it waits for, and every
  // WorkerPool::kWhenPollInterval (its deadline, its call abandoned):
  // atomics and the learn stage's mutex for a moment.
  pool.PostWhen(
      [check = std::move(check), abandoned = std::move(read.abandoned)] {
        return !check->Waits() || (abandoned && abandoned());
      },
      std::move(answer));
}

}  // namespace streamreg
