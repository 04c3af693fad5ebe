#ifndef STREAMREG_SERVER_RPC_INGEST_REACTOR_H_
#define STREAMREG_SERVER_RPC_INGEST_REACTOR_H_

#include <memory>

#include "grpcpp/grpcpp.h"
#include "server/hosting/write_ticket.h"
#include "server/rpc/access_control.h"
#include "server/rpc/async_stream_call.h"
#include "server/rpc/model_stream.h"
#include "streamreg/v1/regression_service.pb.h"

namespace streamreg {

// One Ingest call: reads a batch, learns it on its model's write queue
// (all or nothing), then reads the next; answers the totals when the
// client closes the stream. The first bad batch ends the call with its
// error, naming the message and what was learned before it. A batch still
// queued when the call is cancelled (deadline, client gone) is not
// learned. A batch beyond the model's or the server's limit on queued
// samples ends the call at once with RESOURCE_EXHAUSTED and a retry hint.
// Deletes itself when done.
class IngestReactor final
    : public ReadReactor<v1::IngestRequest, v1::IngestResponse> {
 public:
  IngestReactor(Call* call, const ModelRegistry* registry,
                const AccessControl* access, v1::IngestResponse* response);

  void OnReadDone(bool ok) override;
  void OnDone() override { delete this; }

 private:
  // The message's batch learned in its turn (HostedModel::LearnInTurn),
  // or why not: the next message read, or the call ended.
  void Learned(const absl::StatusOr<LearnOutcome>& outcome);
  void Fail(const absl::Status& status);

  grpc::ServerContext* const context_;
  ModelStream stream_;
  v1::IngestResponse* response_;
  v1::IngestRequest request_;
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_RPC_INGEST_REACTOR_H_
