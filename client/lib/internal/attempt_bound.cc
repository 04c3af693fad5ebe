#include "client/lib/internal/attempt_bound.h"

#include "absl/time/time.h"
#include "client/lib/client.h"
#include "client/lib/internal/client_routes.h"

namespace streamreg {

void AttemptBound::Arm(grpc::ClientContext* context) {
  armed_ = ClientRoutes::Of(*client_).CandidatesFor(model_) > 1;
  if (!armed_) return;
  if (watchdog_ == nullptr) watchdog_ = std::make_unique<ExchangeWatchdog>();
  watchdog_->Arm(context, ExchangeWatchdog::Clock::now() +
                              absl::ToChronoNanoseconds(
                                  client_->options().replica_attempt_timeout));
}

bool AttemptBound::Disarm() {
  if (!armed_) return false;
  armed_ = false;
  return watchdog_->Disarm();
}

}  // namespace streamreg
