#ifndef STREAMREG_CLIENT_LIB_LEARN_SESSION_H_
#define STREAMREG_CLIENT_LIB_LEARN_SESSION_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "client/lib/bidi_exchange.h"
#include "client/lib/client.h"

namespace streamreg {

// The robot's loop over one Learn stream: each call sends one sample and
// returns the prediction the model made before learning it. If the stream
// breaks with a retryable status, a new one is opened and the same sample
// (same id) is sent again; the server answers duplicate = true if it had
// learned it already.
class LearnSession {
 public:
  LearnSession(Client* client, std::string model);

  absl::StatusOr<v1::LearnResponse> Learn(std::span<const double> x,
                                          std::span<const double> y,
                                          std::uint64_t sample_id = 0);
  // Closes the stream; the server's final status.
  absl::Status Close();

 private:
  Client* client_;
  std::string model_;
  BidiExchange<v1::LearnRequest, v1::LearnResponse> exchange_;
};

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_LIB_LEARN_SESSION_H_
