#include "client/lib/learn_session.h"

#include <utility>

namespace streamreg {

LearnSession::LearnSession(Client* client, std::string model)
    : client_(client),
      model_(std::move(model)),
      exchange_(
          client, model_,
          [](v1::RegressionService::Stub& stub, grpc::ClientContext* context) {
            return stub.Learn(context);
          }) {}

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
  const absl::Status status = exchange_.Exchange(request, &response);
  if (!status.ok()) return status;
  return response;
}

absl::Status LearnSession::Close() { return exchange_.Close(); }

}  // namespace streamreg
