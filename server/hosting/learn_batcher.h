#ifndef STREAMREG_SERVER_HOSTING_LEARN_BATCHER_H_
#define STREAMREG_SERVER_HOSTING_LEARN_BATCHER_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/base/mutex.h"
#include "core/model/model.h"
#include "core/model/validated_samples.h"
#include "server/hosting/learn_outcome.h"
#include "server/hosting/write_ticket.h"

namespace streamreg {

// Group commit for the robot's loop. Concurrent Learn streams each send one
// sample (or a few ticks') per message; logged one by one, every message would
// pay its own write-ahead-log fsync (under --sync=always) and they would queue
// behind each other's. The batcher collects the messages that arrive while the
// model's write queue is busy; when the queue gets to them, its owner
// (HostedModel) takes them as one Group — leveldb's batch group — and writes
// it as one batch: one log record, one fsync (in cluster mode, one append to
// the replicated log), then the batch learned after — the model learns
// exactly what learning them one after another would have taught it. Each
// request is told once its sample is durable (or why it cannot be). A stream
// answers its messages before that (LearnReactor); a request that asks for a
// prediction gets the one the model made just before the batch was logged
// (the cautious mode). The batcher never calls its owner: it hands out
// groups, and answers them with the outcome it is given.
class LearnBatcher {
 public:
  // What became of a request's samples.
  struct Result {
    absl::Status status;
    // The last sample's place in the model's stream.
    std::uint64_t sequence = 0;
    // Every sample of the request had been learned before.
    bool duplicate = false;
    // The model's prediction for each sample (LearnOutcome), if asked for,
    // and how stale the first was.
    std::vector<Prediction> before;
    absl::Duration learn_lag;
    // Learned, and durable only once the log's deferred sync is
    // (LearnOutcome::sync_deferred): its report waits for that.
    bool sync_deferred = false;
  };
  // One message's samples, written together and in order.
  struct Request {
    // Its samples (one, or a few ticks'), checked where they arrived.
    ValidatedSamples sample;
    // What they hold on their way (HostedModel::Announce): given back
    // before `done` runs.
    WriteTicket ticket;
    // Whether `done` gets the model's prediction for each sample.
    bool predict = false;
    // Asked just before the sample is written: true if it must not be —
    // its call is gone, or ended at an earlier sample that could not be
    // made durable. Answered CANCELLED and not learned, so that what a
    // stream teaches the model is always a prefix of what it sent, in
    // order (a later sample learned before an earlier one resent would
    // teach it another order).
    std::function<bool()> abandoned;
    // The caller's: how long a cluster model's write may wait for this
    // replica's apply (the latest of a batch's requests counts).
    absl::Time deadline = absl::InfiniteFuture();
    std::function<void(Result)> done;
  };

  // Requests taken together to be written as one batch: their samples in
  // order, their tickets joined. The writer writes batch() as options()
  // say and gives the outcome to Answer; a group refused whole is written
  // again request by request (TakeAlone), so that each gets the answer it
  // would have had on its own.
  class Group {
   public:
    Group() = default;
    Group(Group&&) = default;
    Group& operator=(Group&&) = default;

    bool empty() const { return requests_.empty(); }
    std::size_t size() const { return requests_.size(); }
    // The samples as one batch (an error: none can be written).
    const absl::StatusOr<ValidatedSamples>& batch() const { return batch_; }
    // Whether a request waits for its predictions (Result::before).
    bool predict() const { return predict_; }
    // How the batch is written: as Learn streams' samples, with the group's
    // ticket, until the latest of the requests' deadlines, its fsync
    // deferred unless an answer waits for it.
    WriteOptions options() {
      return {.deadline = deadline_,
              .ticket = &ticket_,
              .streamed = true,
              .sync_later = !predict_};
    }
    // Answers each request from the batch's outcome — with `before` (the
    // predictions made for the batch, taken), each its own — once the
    // ticket is given back.
    void Answer(const absl::StatusOr<LearnOutcome>& outcome,
                std::vector<Prediction>* before);
    // After the batch was refused whole: the next request as a group of
    // its own, with its part of the ticket (one abandoned meanwhile, as an
    // earlier one of its call just failed, is answered CANCELLED and
    // skipped); nullopt once none is left.
    std::optional<Group> TakeAlone();

   private:
    friend class LearnBatcher;
    // Adds a request that was not abandoned.
    void Add(Request request);
    // Joins the requests' samples into batch_.
    void Close();

    std::vector<Request> requests_;
    std::size_t next_alone_ = 0;
    WriteTicket ticket_;
    absl::StatusOr<ValidatedSamples> batch_ = ValidatedSamples();
    absl::Time deadline_ = absl::InfinitePast();
    bool predict_ = false;
  };

  // Samples per batch at most (a burst is learned in several; a request
  // of more is a batch of its own).
  static constexpr std::size_t kMaxBatch = 256;

  // Queues the request; true if no drain is scheduled (the caller then
  // schedules one on the model's write queue).
  bool Add(Request request) ABSL_LOCKS_EXCLUDED(mutex_);
  // On the model's write queue: the requests waiting now, as a group to
  // write (those abandoned answered CANCELLED and left out; empty if none
  // is left), and in `more` whether others wait after it (the caller
  // schedules another drain).
  Group TakeGroup(bool* more) ABSL_LOCKS_EXCLUDED(mutex_);

 private:
  // Takes the requests to write now, and whether more wait after them.
  std::vector<Request> TakeBatch(bool* more) ABSL_LOCKS_EXCLUDED(mutex_);

  Mutex mutex_;
  std::vector<Request> pending_ ABSL_GUARDED_BY(mutex_);
  bool scheduled_ ABSL_GUARDED_BY(mutex_) = false;  // a drain is due
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_HOSTING_LEARN_BATCHER_H_
