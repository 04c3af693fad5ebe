#include "server/rpc/predict_stream_reactor.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "server/hosting/parked_read.h"
#include "server/rpc/call_deadline.h"
#include "server/rpc/grpc_status.h"
#include "server/rpc/request_limits.h"
#include "server/rpc/wire_conversion.h"

namespace streamreg {

ReadAfter ReadAfterFor(const v1::PredictRequest& request, absl::Time deadline) {
  return {
      .min_learned = request.has_min_learned()
                         ? std::optional<std::uint64_t>(request.min_learned())
                         : std::nullopt,
      .deadline = deadline};
}

absl::Status AnswerPredict(const HostedModel& model,
                           const v1::PredictRequest& request,
                           const ReadAfter& after,
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
  const PredictOptions options = {
      .interval_level = request.has_interval_level()
                            ? std::optional<double>(request.interval_level())
                            : std::nullopt,
      .calibration = IntervalCalibration::kQuery,
      .with_neighbors = request.with_neighbors()};
  if (absl::Status status = model.Predict(QueriesFromWire(request.queries()),
                                          &predictions, options, after);
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

PredictStreamReactor::PredictStreamReactor(Call* call,
                                           const ModelRegistry* registry,
                                           const AccessControl* access,
                                           WorkerPool* predictions)
    : StreamReactor(call),
      context_(call->context()),
      predictions_(predictions),
      stream_(registry, access, *context_, Permission::kRead) {
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
  absl::StatusOr<AdmissionTicket> admitted =
      model.ok() ? stream_.AdmitPrediction(**model) : model.status();
  if (!admitted.ok()) {
    Finish(ToGrpcStatus(admitted.status(), *context_));
    return;
  }
  admitted_ = *std::move(admitted);
  const std::shared_ptr<const HostedModel> found = *std::move(model);
  const ReadAfter after =
      found->PinAcknowledged(ReadAfterFor(request_, CallDeadline(*context_)));
  PostRead(*predictions_,
           {.reads = {{found, after}},
            .abandoned = [this] { return context_->IsCancelled(); },
            .parked = [this] { stream_.ParkRead(admitted_); },
            .answer = [this, found, after] { Answer(*found, after); },
            .answer_here_if_at_once = request_.queries_size() == 1});
}

void PredictStreamReactor::Answer(const HostedModel& model,
                                  const ReadAfter& after) {
  response_.Clear();
  // A call cancelled while its read was parked does not wait for learning
  // on a thread now.
  const absl::Status status =
      context_->IsCancelled()
          ? absl::CancelledError("call cancelled")
          : AnswerPredict(model, request_, after, &response_);
  admitted_.Release();  // before the next read admits the next request
  if (!status.ok()) {
    Finish(ToGrpcStatus(Prefixed(status, stream_.Where()), *context_));
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
