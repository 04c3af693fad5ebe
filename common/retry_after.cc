#include "common/retry_after.h"

#include <cstdint>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace streamreg {
namespace {

// The payload of a status that carries a retry hint: milliseconds, decimal.
constexpr absl::string_view kRetryAfterUrl =
    "type.streamreg.dev/streamreg.RetryAfterMs";

}  // namespace

absl::Status WithRetryAfter(absl::Status status, absl::Duration retry_after) {
  status.SetPayload(
      kRetryAfterUrl,
      absl::Cord(absl::StrCat(absl::ToInt64Milliseconds(retry_after))));
  return status;
}

std::optional<absl::Duration> RetryAfter(const absl::Status& status) {
  const auto payload = status.GetPayload(kRetryAfterUrl);
  std::int64_t milliseconds = 0;
  if (!payload.has_value() ||
      !absl::SimpleAtoi(std::string(*payload), &milliseconds)) {
    return std::nullopt;
  }
  return absl::Milliseconds(milliseconds);
}

}  // namespace streamreg
