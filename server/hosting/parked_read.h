#ifndef STREAMREG_SERVER_HOSTING_PARKED_READ_H_
#define STREAMREG_SERVER_HOSTING_PARKED_READ_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "server/hosting/hosted_model.h"
#include "server/hosting/read_after.h"
#include "server/hosting/worker_pool.h"

namespace streamreg {

// A model a read reads, and what it waits for there — pinned when the read
// arrived (HostedModel::PinAcknowledged).
struct ModelRead {
  std::shared_ptr<const HostedModel> model = nullptr;
  ReadAfter after = {};
};

// A read (a prediction, a model's figures, a page of models) on its way to
// the reads pool: the models it reads, and its callbacks.
struct ParkableRead {
  std::vector<ModelRead> reads = {};
  // The call is gone (cancelled): the read stops waiting and answers.
  std::function<bool()> abandoned = nullptr;
  // Called once, before the read is parked (the caller gives back its
  // place among the server's reads in flight, keeping its model's).
  std::function<void()> parked = nullptr;
  // Answers the read, on a thread of the pool (or the caller's: below).
  std::function<void()> answer = nullptr;
  // A prediction of one query, as cheap as a Learn message's answer: if it
  // need not wait for anything (HostedModel::PredictionAnswersAtOnce), it
  // is answered on the caller's thread, gRPC's, without the hop to the
  // pool, and at that thread's priority (--realtime-priority): a
  // controller that only predicts is answered as one that learns.
  bool answer_here_if_at_once = false;
};

// Whether a read still waits for learning in any of its models: what the
// reads pool asks of a parked read as each batch is learned on a model it
// waits for, and every WorkerPool::kWhenPollInterval. A
// model found not waiting is not looked at again (what it learned only
// grows, a deadline passed stays passed, a deleted model stays deleted), so
// a page of many models costs one model's check per poll once the models
// before the one it waits for are done (bench/bench_parked_reads.cc).
// Thread-compatible.
class ParkedReadCheck {
 public:
  explicit ParkedReadCheck(std::vector<ModelRead> reads)
      : reads_(std::move(reads)) {}
  bool Waits();
  const std::vector<ModelRead>& reads() const { return reads_; }

 private:
  std::vector<ModelRead> reads_;
  std::size_t done_ = 0;  // reads_[0, done_) wait no more
};

// Answers a read here if it may (answer_here_if_at_once), or hands it to
// the reads pool: at once; or, if it would wait for samples this server
// holds and has not learned yet in any of its models
// (HostedModel::ReadWaitsForLearning), parked until it would not —
// learned, its deadline passed, the model deleted, the call abandoned —
// holding no thread meanwhile (WorkerPool::PostWhen). So reads of a model
// whose learning is behind (a take-over, a replica replaying its log) do
// not take the threads other models' reads need; the answer then finds
// the samples learned, or answers the deadline's error, without waiting.
void PostRead(WorkerPool& pool, ParkableRead read);

}  // namespace streamreg

#endif  // STREAMREG_SERVER_HOSTING_PARKED_READ_H_
