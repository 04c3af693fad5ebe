#ifndef STREAMREG_SERVER_RPC_REFIT_REACTOR_H_
#define STREAMREG_SERVER_RPC_REFIT_REACTOR_H_

#include <memory>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/base/mutex.h"
#include "grpcpp/grpcpp.h"
#include "server/hosting/hosted_model.h"
#include "server/rpc/async_stream_call.h"
#include "streamreg/v1/model_service.pb.h"

namespace streamreg {

// One Refit call: runs the model's batch refit on its write queue and
// streams progress. Progress arrives faster than a slow client reads it,
// so only the latest is kept while a write is in flight; the final message
// (done == total, with the new stats) is always sent. The refit completes
// even if the call is cancelled. Deletes itself when done.
class RefitReactor final
    : public WriteReactor<v1::RefitRequest, v1::RefitProgress> {
 public:
  // NOT_FOUND (or any error) in `model` finishes the call at once.
  // `deadline`: the call's (CallDeadline), which a cluster model's refit
  // waits for this replica's apply until at most.
  RefitReactor(Call* call, absl::StatusOr<std::shared_ptr<HostedModel>> model,
               absl::Time deadline);

  void OnWriteDone(bool ok) override;
  void OnDone() override { delete this; }

 private:
  // The refit's end (HostedModel::RefitInTurn): the last progress with the
  // model's figures, then the call's status.
  void Refitted(const absl::Status& status);
  void Publish(v1::RefitProgress progress) ABSL_LOCKS_EXCLUDED(mutex_);
  // Finishes once the refit has ended and no write is left.
  void FinishIfDone() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);

  std::shared_ptr<HostedModel> model_;
  const absl::Time deadline_;
  // When the call arrived (the refit's time in the log counts its turn).
  const absl::Time start_ = absl::Now();
  // The refit's thread and gRPC's write callbacks meet here.
  Mutex mutex_;
  v1::RefitProgress writing_ ABSL_GUARDED_BY(mutex_);
  bool write_in_flight_ ABSL_GUARDED_BY(mutex_) = false;
  std::optional<v1::RefitProgress> pending_ ABSL_GUARDED_BY(mutex_);
  std::optional<grpc::Status> result_ ABSL_GUARDED_BY(mutex_);
  bool finished_ ABSL_GUARDED_BY(mutex_) = false;
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_RPC_REFIT_REACTOR_H_
