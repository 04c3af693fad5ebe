#ifndef STREAMREG_SERVER_RPC_REQUEST_LIMITS_H_
#define STREAMREG_SERVER_RPC_REQUEST_LIMITS_H_

#include <cstddef>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace streamreg {

// The most samples one Ingest message, and the most queries one Predict
// request, may hold. A message's bytes are bounded by --max-message-bytes;
// these bound what its count makes the server allocate besides (views of
// the batch, its log record, a prediction per query).
inline constexpr std::size_t kMaxSamplesPerMessage = 65536;
inline constexpr std::size_t kMaxQueriesPerRequest = 65536;
// The most samples, and predictions ahead, one Learn message may hold: a
// loop's few ticks, answered at once (bulk loads go through Ingest).
inline constexpr std::size_t kMaxLearnSamplesPerMessage = 1024;
inline constexpr std::size_t kMaxAheadPerMessage = 1024;

// OK, or INVALID_ARGUMENT naming `field` when `count` is over `limit`:
// "samples: 70000 in one message; at most 65536".
inline absl::Status CheckRepeatedCount(std::size_t count, std::size_t limit,
                                       absl::string_view field) {
  if (count <= limit) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(field, ": ", count, " in one message; at most ", limit));
}

}  // namespace streamreg

#endif  // STREAMREG_SERVER_RPC_REQUEST_LIMITS_H_
