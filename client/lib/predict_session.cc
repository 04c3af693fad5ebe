#include "client/lib/predict_session.h"

#include <utility>

#include "client/lib/internal/bidi_exchange.h"

namespace streamreg {

PredictSession::PredictSession(Client* client, std::string model)
    : model_(std::move(model)),
      exchange_(std::make_unique<
                BidiExchange<v1::PredictRequest, v1::PredictResponse>>(
          client, model_,
          [](v1::RegressionService::Stub& stub, grpc::ClientContext* context) {
            return stub.PredictStream(context);
          })) {}

PredictSession::~PredictSession() = default;

absl::StatusOr<v1::Prediction> PredictSession::Predict(
    std::span<const double> x, const PredictCallOptions& options) {
  v1::PredictRequest request;
  request.set_model(model_);
  options.SetOn(&request);
  request.add_queries()->mutable_x()->Assign(x.begin(), x.end());
  v1::PredictResponse response;
  const absl::Status status = exchange_->Exchange(request, &response);
  if (!status.ok()) return status;
  return response.predictions(0);
}

absl::Status PredictSession::Close() { return exchange_->Close(); }

}  // namespace streamreg
