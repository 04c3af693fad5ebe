#ifndef STREAMREG_SERVER_HOSTING_READ_AFTER_H_
#define STREAMREG_SERVER_HOSTING_READ_AFTER_H_

#include <cstdint>
#include <optional>

#include "absl/time/time.h"

namespace streamreg {

// What a read waits for before it predicts (HostedModel::Predict).
struct ReadAfter {
  // Samples learned at least (PredictRequest.min_learned: a write's
  // position in the model's stream, read on any of its servers; 0: none).
  // Unset: every sample this server acknowledged before the call.
  std::optional<std::uint64_t> min_learned = std::nullopt;
  // Without min_learned: the samples this server had acknowledged when the
  // read arrived (HostedModel::PinAcknowledged), so that a read that waits
  // for learning does not also wait for what arrives after it. Unset: as
  // many as are acknowledged when it is answered.
  std::optional<std::uint64_t> acknowledged = std::nullopt;
  // Until when it may wait for them (the call's deadline).
  absl::Time deadline = absl::InfiniteFuture();
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_HOSTING_READ_AFTER_H_
