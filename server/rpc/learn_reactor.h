#ifndef STREAMREG_SERVER_RPC_LEARN_REACTOR_H_
#define STREAMREG_SERVER_RPC_LEARN_REACTOR_H_

#include <cstdint>
#include <memory>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "core/base/mutex.h"
#include "core/model/validated_samples.h"
#include "grpcpp/grpcpp.h"
#include "server/hosting/durability_watermark.h"
#include "server/hosting/learn_batcher.h"
#include "server/rpc/access_control.h"
#include "server/rpc/async_stream_call.h"
#include "server/rpc/model_stream.h"
#include "streamreg/v1/regression_service.pb.h"

namespace streamreg {

// One Learn call, the robot's loop, answer first: each message is
// validated, predicted from the model as it stands and answered at once, on
// the completion queue's thread that read it, with its predictions ahead
// (LearnRequest.ahead); its sample (or samples) is handed to the
// model's group commit (LearnBatcher) right after the answer's write has
// started, and that makes it durable and has it learned in order, off the
// response path. (The next message is read only once the answer is
// written, on the same thread: the samples of a call reach the group commit
// in order.) Every answer carries the stream's
// durability watermark (DurabilityWatermark). A message that asks to be
// answered only once durable (answer_when_durable) is answered from the
// group commit instead, as before this was the default. The next message
// is read once the answer is written. After the client half-closes, the
// call ends OK once every sample is durable, the final watermark in the
// trailer kDurableMessagesTrailer. A bad message ends the call with its error
// (the samples before it stay); a sample that cannot be made durable ends it
// with a status naming its message; a sample beyond the server's limit on
// queued samples ends it with RESOURCE_EXHAUSTED and a retry hint. The call
// ends only when no sample of it is still in the group commit. Deletes
// itself when done.
class LearnReactor final
    : public BidiReactor<v1::LearnRequest, v1::LearnResponse> {
 public:
  LearnReactor(Call* call, const ModelRegistry* registry,
               const AccessControl* access);

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnDone() override { delete this; }

 private:
  // What the call does next, decided under mutex_ and done outside it.
  enum class Step { kNone, kRead, kWrite, kFinish };

  // A sample on its way to the group commit.
  struct HandOn {
    std::shared_ptr<HostedModel> model;
    LearnBatcher::Request request;
  };
  // Handles the message just read: fills `answer` unless the answer waits
  // for durability, and `hand_on` with its sample's request to the group
  // commit; the error that ends the call, if any.
  absl::Status Accept(std::optional<v1::LearnResponse>* answer,
                      std::optional<HandOn>* hand_on);
  // The message's samples checked by the model: its `samples`, or its one
  // `sample` (none for a message of queries alone); the error names them.
  absl::StatusOr<ValidatedSamples> CheckedSamples(
      const HostedModel& model) const;
  // The message's predictions ahead, into `ahead`, and how stale they
  // were into `answer` (nothing kept or calibrated yet: SendAhead).
  absl::Status PredictAhead(const HostedModel& model,
                            std::vector<Prediction>* ahead,
                            v1::LearnResponse* answer) const;
  // The message accepted: its predictions ahead calibrated and kept to be
  // scored (HostedModel::SendAhead), into `answer`.
  void SendAhead(HostedModel& model, std::vector<Prediction>& ahead,
                 v1::LearnResponse* answer) const;
  // The answer to each of `samples`, from the model as it stands, into
  // `answer` (its staleness the first's).
  absl::Status AnswerAsItStands(HostedModel& model,
                                const ValidatedSamples& samples,
                                v1::LearnResponse* answer) const;
  // The group commit's word on message `number` (`batched`: its samples
  // came in LearnRequest.samples).
  void Logged(std::uint64_t number, bool answer_waits, bool batched,
              LearnBatcher::Result result) ABSL_LOCKS_EXCLUDED(mutex_);
  // The next step from the state (and the state changed to it).
  Step Advance() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);
  // Takes a step other than kNone. With none to take, a callback must not
  // touch the reactor once mutex_ is released: another callback may have
  // finished the call meanwhile, and OnDone deleted it (the service
  // fuzzer's UBSan caught a call of Take(kNone) on a deleted reactor).
  void Take(Step step) ABSL_LOCKS_EXCLUDED(mutex_);

  grpc::ServerContext* const context_;
  // Used by the read callback only (one at a time).
  ModelStream stream_;
  v1::LearnRequest request_;

  Mutex mutex_;
  // The write in flight (or about to be started).
  v1::LearnResponse response_ ABSL_GUARDED_BY(mutex_);
  DurabilityWatermark durable_ ABSL_GUARDED_BY(mutex_);
  // Messages handed to the group commit and not reported back.
  std::uint64_t in_commit_ ABSL_GUARDED_BY(mutex_) = 0;
  // A read started; a message read being handled (Accept).
  bool reading_ ABSL_GUARDED_BY(mutex_) = true;
  bool handling_ ABSL_GUARDED_BY(mutex_) = false;
  bool writing_ ABSL_GUARDED_BY(mutex_) = false;
  // A message whose answer waits for its durability, and its predictions
  // ahead, made when it was read.
  bool awaiting_answer_ ABSL_GUARDED_BY(mutex_) = false;
  google::protobuf::RepeatedPtrField<v1::Prediction> held_ahead_
      ABSL_GUARDED_BY(mutex_);
  bool half_closed_ ABSL_GUARDED_BY(mutex_) = false;
  bool finished_ ABSL_GUARDED_BY(mutex_) = false;
  std::optional<absl::Status> end_ ABSL_GUARDED_BY(mutex_);
  // A sample of this call was not written (not durable): the samples after
  // it are not written either (LearnBatcher::Request::abandoned). A later
  // message's bad sample, which ends the call too, leaves the samples
  // before it to be written.
  bool write_failed_ ABSL_GUARDED_BY(mutex_) = false;
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_RPC_LEARN_REACTOR_H_
