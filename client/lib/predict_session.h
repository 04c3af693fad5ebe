#ifndef STREAMREG_CLIENT_LIB_PREDICT_SESSION_H_
#define STREAMREG_CLIENT_LIB_PREDICT_SESSION_H_

#include <memory>
#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "client/lib/client.h"

namespace streamreg {

template <class Request, class Response>
class BidiExchange;

// Predictions over one PredictStream call, one query per exchange (the
// lowest latency per tick); reopened and retried on a retryable status
// (predicting is idempotent). A controller that only predicts and must
// answer inside its tick asks with min_learned = 0: the model as it stands,
// not waiting for other clients' writes to be learned.
class PredictSession {
 public:
  PredictSession(Client* client, std::string model);
  ~PredictSession();

  absl::StatusOr<v1::Prediction> Predict(
      std::span<const double> x, const PredictCallOptions& options = {});
  absl::Status Close();

 private:
  std::string model_;
  std::unique_ptr<BidiExchange<v1::PredictRequest, v1::PredictResponse>>
      exchange_;
};

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_LIB_PREDICT_SESSION_H_
