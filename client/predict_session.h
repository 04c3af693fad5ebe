#ifndef STREAMREG_CLIENT_PREDICT_SESSION_H_
#define STREAMREG_CLIENT_PREDICT_SESSION_H_

#include <memory>
#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "client/client.h"

namespace streamreg {

// Predictions over one PredictStream call, one query per exchange (the
// lowest latency per tick); reopened and retried on a retryable status
// (predicting is idempotent).
class PredictSession {
 public:
  PredictSession(Client* client, std::string model);
  ~PredictSession();

  absl::StatusOr<v1::Prediction> Predict(std::span<const double> x);
  absl::Status Close();

 private:
  absl::Status Exchange(const v1::PredictRequest& request,
                        v1::PredictResponse* response);

  Client* client_;
  std::string model_;
  std::unique_ptr<grpc::ClientContext> context_;
  std::unique_ptr<
      grpc::ClientReaderWriter<v1::PredictRequest, v1::PredictResponse>>
      stream_;
};

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_PREDICT_SESSION_H_
