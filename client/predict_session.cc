#include "client/predict_session.h"

#include <utility>

namespace streamreg {

PredictSession::PredictSession(Client* client, std::string model)
    : client_(client), model_(std::move(model)) {}

PredictSession::~PredictSession() {
  if (stream_ != nullptr) context_->TryCancel();
}

absl::Status PredictSession::Exchange(const v1::PredictRequest& request,
                                      v1::PredictResponse* response) {
  if (stream_ == nullptr) {
    context_ = std::make_unique<grpc::ClientContext>();
    stream_ = client_->regression().PredictStream(context_.get());
  }
  if (stream_->Write(request) && stream_->Read(response)) {
    return absl::OkStatus();
  }
  stream_->WritesDone();
  absl::Status status = FromGrpcStatus(stream_->Finish());
  stream_.reset();
  if (status.ok()) {
    status = absl::UnavailableError("the server closed the PredictStream");
  }
  return status;
}

absl::StatusOr<v1::Prediction> PredictSession::Predict(
    std::span<const double> x) {
  v1::PredictRequest request;
  request.set_model(model_);
  request.add_queries()->mutable_x()->Assign(x.begin(), x.end());
  v1::PredictResponse response;
  const absl::Status status =
      RetryCall(client_->options().retry,
                [&](int /*attempt*/) { return Exchange(request, &response); });
  if (!status.ok()) return status;
  return response.predictions(0);
}

absl::Status PredictSession::Close() {
  if (stream_ == nullptr) return absl::OkStatus();
  stream_->WritesDone();
  const absl::Status status = FromGrpcStatus(stream_->Finish());
  stream_.reset();
  return status;
}

}  // namespace streamreg
