#include "common/nearest_name.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"

namespace streamreg {

std::size_t EditDistance(absl::string_view a, absl::string_view b) {
  // d[i][j]: the distance between a's first i and b's first j characters,
  // three rows kept (a swap looks two rows back).
  const std::size_t n = b.size();
  std::vector<std::size_t> before_last(n + 1), last(n + 1), row(n + 1);
  for (std::size_t j = 0; j <= n; ++j) last[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    row[0] = i;
    for (std::size_t j = 1; j <= n; ++j) {
      const std::size_t substitution = a[i - 1] == b[j - 1] ? 0 : 1;
      row[j] =
          std::min({last[j] + 1, row[j - 1] + 1, last[j - 1] + substitution});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        row[j] = std::min(row[j], before_last[j - 2] + 1);
      }
    }
    std::swap(before_last, last);
    std::swap(last, row);
  }
  return last[n];
}

std::optional<std::string> NearestName(
    absl::string_view name, std::span<const std::string> candidates) {
  std::optional<std::string> nearest;
  std::size_t best = 0;
  for (const std::string& candidate : candidates) {
    const std::size_t distance = EditDistance(name, candidate);
    if (distance == 0) return std::nullopt;
    const std::size_t longer = std::max(name.size(), candidate.size());
    if (distance > std::max<std::size_t>(1, longer / 3)) continue;
    if (!nearest.has_value() || distance < best) {
      nearest = candidate;
      best = distance;
    }
  }
  return nearest;
}

std::string DidYouMean(absl::string_view name,
                       std::span<const std::string> candidates,
                       absl::string_view before, absl::string_view after) {
  const std::optional<std::string> nearest = NearestName(name, candidates);
  if (!nearest.has_value()) return "";
  return absl::StrCat(" (did you mean ", before, *nearest, after, "?)");
}

}  // namespace streamreg
