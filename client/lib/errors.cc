#include "client/lib/errors.h"

#include <cstdint>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/retry_after.h"

namespace streamreg {

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      status.error_message());
}

absl::Status FromGrpcStatus(const grpc::Status& status,
                            const grpc::ClientContext& context) {
  absl::Status converted = FromGrpcStatus(status);
  const auto& trailers = context.GetServerTrailingMetadata();
  const auto pushback = trailers.find("grpc-retry-pushback-ms");
  std::int64_t milliseconds = 0;
  if (!converted.ok() && pushback != trailers.end() &&
      absl::SimpleAtoi(
          absl::string_view(pushback->second.data(), pushback->second.size()),
          &milliseconds) &&
      milliseconds >= 0) {
    converted =
        WithRetryAfter(std::move(converted), absl::Milliseconds(milliseconds));
  }
  return converted;
}

}  // namespace streamreg
