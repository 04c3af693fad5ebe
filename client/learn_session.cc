#include "client/learn_session.h"

#include <utility>

namespace streamreg {

LearnSession::LearnSession(Client* client, std::string model)
    : client_(client), model_(std::move(model)) {}

LearnSession::~LearnSession() {
  if (stream_ != nullptr) context_->TryCancel();
}

absl::Status LearnSession::Exchange(const v1::LearnRequest& request,
                                    v1::LearnResponse* response) {
  if (stream_ == nullptr) {
    context_ = std::make_unique<grpc::ClientContext>();  // no deadline
    stream_ = client_->regression().Learn(context_.get());
  }
  if (stream_->Write(request) && stream_->Read(response)) {
    return absl::OkStatus();
  }
  stream_->WritesDone();
  absl::Status status = FromGrpcStatus(stream_->Finish());
  stream_.reset();
  if (status.ok()) {  // closed by the server without an error: draining
    status = absl::UnavailableError("the server closed the Learn stream");
  }
  return status;
}

absl::StatusOr<v1::LearnResponse> LearnSession::Learn(std::span<const double> x,
                                                      std::span<const double> y,
                                                      std::uint64_t sample_id) {
  v1::LearnRequest request;
  request.set_model(model_);
  request.mutable_sample()->mutable_x()->Assign(x.begin(), x.end());
  request.mutable_sample()->mutable_y()->Assign(y.begin(), y.end());
  request.mutable_sample()->set_sample_id(
      sample_id != 0 ? sample_id : client_->NextSampleId());
  v1::LearnResponse response;
  const absl::Status status =
      RetryCall(client_->options().retry,
                [&](int /*attempt*/) { return Exchange(request, &response); });
  if (!status.ok()) return status;
  return response;
}

absl::Status LearnSession::Close() {
  if (stream_ == nullptr) return absl::OkStatus();
  stream_->WritesDone();
  const absl::Status status = FromGrpcStatus(stream_->Finish());
  stream_.reset();
  return status;
}

}  // namespace streamreg
