#ifndef STREAMREG_CLIENT_LIB_INTERNAL_ATTEMPT_BOUND_H_
#define STREAMREG_CLIENT_LIB_INTERNAL_ATTEMPT_BOUND_H_

#include <memory>
#include <string>

#include "client/lib/internal/exchange_watchdog.h"
#include "grpcpp/grpcpp.h"

namespace streamreg {

class Client;

// Bounds each exchange on a session's stream about a model (LearnSession,
// PredictSession) by the client's replica_attempt_timeout while the model
// has another server to go to: an answer that does not come by then
// cancels the stream (a stalled server, left for the next). With one
// server an exchange waits as long as it takes. The watchdog's thread is
// made when first needed. Used by one thread.
class AttemptBound {
 public:
  AttemptBound(Client* client, std::string model)
      : client_(client), model_(std::move(model)) {}

  // Before an exchange on the stream of `context`.
  void Arm(grpc::ClientContext* context);
  // After it: whether its bound ran out, and the stream was cancelled.
  bool Disarm();

 private:
  Client* const client_;
  const std::string model_;
  bool armed_ = false;
  std::unique_ptr<ExchangeWatchdog> watchdog_;  // made when first armed
};

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_LIB_INTERNAL_ATTEMPT_BOUND_H_
