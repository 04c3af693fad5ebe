#include "server/rpc/predict_stream_reactor.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "server/rpc/grpc_status.h"
#include "server/rpc/request_limits.h"
#include "server/rpc/wire_conversion.h"

namespace streamreg {

absl::Status AnswerPredict(const HostedModel& model,
                           const v1::PredictRequest& request,
                           v1::PredictResponse* response) {
  if (request.queries().empty()) {
    return absl::InvalidArgumentError("queries: empty");
  }
  if (absl::Status status =
          CheckRepeatedCount(static_cast<std::size_t>(request.queries_size()),
                             kMaxQueriesPerRequest, "queries");
      !status.ok()) {
    return status;
  }
  if (model.deleted()) {
    return absl::NotFoundError(
        absl::StrCat("model '", model.name(), "' was deleted"));
  }
  thread_local std::vector<Prediction> predictions;
  if (absl::Status status =
          model.Predict(QueriesFromWire(request.queries()), &predictions);
      !status.ok()) {
    return status;
  }
  response->mutable_predictions()->Reserve(
      static_cast<int>(predictions.size()));
  std::uint64_t learned = predictions.front().learned;
  for (const Prediction& prediction : predictions) {
    PredictionToWire(prediction, response->add_predictions());
    learned = std::min(learned, prediction.learned);
  }
  response->set_num_samples(learned);
  return absl::OkStatus();
}

PredictStreamReactor::PredictStreamReactor(grpc::CallbackServerContext* context,
                                           const ModelRegistry* registry,
                                           const AccessControl* access)
    : context_(context),
      stream_(registry, access, *context, Permission::kRead) {
  if (absl::Status status = stream_.Authenticate(); !status.ok()) {
    Finish(ToGrpcStatus(status));
    return;
  }
  StartRead(&request_);
}

void PredictStreamReactor::OnReadDone(bool ok) {
  if (!ok) {
    Finish(StreamEndStatus(context_));
    return;
  }
  absl::StatusOr<std::shared_ptr<HostedModel>> model =
      stream_.Next(request_.model());
  absl::Status status = model.status();
  if (status.ok()) {
    absl::StatusOr<AdmissionTicket> admitted = stream_.AdmitPrediction(**model);
    response_.Clear();
    status = admitted.ok()
                 ? Prefixed(AnswerPredict(**model, request_, &response_),
                            stream_.Where())
                 : admitted.status();
  }
  if (!status.ok()) {
    Finish(ToGrpcStatus(status, *context_));
    return;
  }
  StartWrite(&response_);
}

void PredictStreamReactor::OnWriteDone(bool ok) {
  if (!ok) {
    Finish(StreamEndStatus(context_, /*write_failed=*/true));
    return;
  }
  StartRead(&request_);
}

}  // namespace streamreg
