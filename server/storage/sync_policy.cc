#include "server/storage/sync_policy.h"

#include <cstdint>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace streamreg {

absl::StatusOr<SyncPolicy> SyncPolicy::Parse(absl::string_view text) {
  if (text == "always") return SyncPolicy{};
  constexpr absl::string_view kInterval = "interval:";
  std::int64_t ms = 0;
  if (absl::StartsWith(text, kInterval) &&
      absl::SimpleAtoi(text.substr(kInterval.size()), &ms) && ms >= 1 &&
      ms <= 60000) {
    return SyncPolicy{Mode::kInterval, absl::Milliseconds(ms)};
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--sync: '", text,
                   "' is neither 'always' nor 'interval:MS' with MS from 1 "
                   "to 60000"));
}

std::string SyncPolicy::ToString() const {
  if (mode == Mode::kAlways) return "always";
  return absl::StrCat("interval:", absl::ToInt64Milliseconds(interval));
}

}  // namespace streamreg
