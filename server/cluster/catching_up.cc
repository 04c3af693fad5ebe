#include "server/cluster/catching_up.h"

#include "absl/strings/str_cat.h"
#include "common/served_by.h"

namespace streamreg {

absl::Status WhileCatchingUp(absl::string_view model, bool catching_up,
                             std::uint64_t applied,
                             const std::vector<std::string>& others,
                             CallKind kind) {
  if (!catching_up) return absl::OkStatus();
  const std::string where = absl::StrCat(
      "model '", model, "' is catching up on its log on this server (applied ",
      applied, " entries)");
  if (!others.empty()) {
    return SendElsewhereError(
        absl::StrCat(where, "; ",
                     kind == CallKind::kRead ? "read from" : "write to"),
        others);
  }
  if (kind == CallKind::kWrite) return absl::OkStatus();
  return absl::UnavailableError(
      absl::StrCat(where, ", has no sample yet and no other server; retry"));
}

}  // namespace streamreg
