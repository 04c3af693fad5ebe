#ifndef STREAMREG_SERVER_RPC_REFIT_REACTOR_H_
#define STREAMREG_SERVER_RPC_REFIT_REACTOR_H_

#include <memory>
#include <mutex>
#include <optional>

#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"
#include "server/hosting/hosted_model.h"
#include "streamreg/v1/model_service.pb.h"

namespace streamreg {

// One Refit call: runs the model's batch refit on its write queue and
// streams progress. Progress arrives faster than a slow client reads it,
// so only the latest is kept while a write is in flight; the final message
// (done == total, with the new stats) is always sent. The refit completes
// even if the call is cancelled. Deletes itself when done.
class RefitReactor final : public grpc::ServerWriteReactor<v1::RefitProgress> {
 public:
  // NOT_FOUND (or any error) in `model` finishes the call at once.
  explicit RefitReactor(absl::StatusOr<std::shared_ptr<HostedModel>> model);

  void OnWriteDone(bool ok) override;
  void OnDone() override { delete this; }

 private:
  void Run();
  void Publish(v1::RefitProgress progress);
  // Finishes once the refit has ended and no write is left (mutex_ held).
  void FinishIfDone();

  std::shared_ptr<HostedModel> model_;
  std::mutex mutex_;
  v1::RefitProgress writing_;
  bool write_in_flight_ = false;
  std::optional<v1::RefitProgress> pending_;
  std::optional<grpc::Status> result_;
  bool finished_ = false;
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_RPC_REFIT_REACTOR_H_
