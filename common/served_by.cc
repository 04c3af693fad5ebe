#include "common/served_by.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace streamreg {
namespace {

constexpr absl::string_view kMarker = "(servers=";

}  // namespace

absl::Status ServedByError(absl::string_view model,
                           const std::vector<std::string>& servers) {
  return SendElsewhereError(
      absl::StrCat("model '", model,
                   "' is served by other servers, not this one"),
      servers);
}

absl::Status SendElsewhereError(absl::string_view reason,
                                const std::vector<std::string>& servers) {
  return absl::UnavailableError(
      absl::StrCat(reason, " ", kMarker, absl::StrJoin(servers, ","), ")"));
}

std::vector<std::string> ServedBy(const absl::Status& status) {
  if (!absl::IsUnavailable(status)) return {};
  const absl::string_view message = status.message();
  const std::size_t at = message.rfind(kMarker);
  if (at == absl::string_view::npos) return {};
  absl::string_view list = message.substr(at + kMarker.size());
  const std::size_t end = list.find(')');
  if (end == absl::string_view::npos) return {};
  return absl::StrSplit(list.substr(0, end), ',', absl::SkipEmpty());
}

}  // namespace streamreg
