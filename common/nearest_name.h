#ifndef STREAMREG_COMMON_NEAREST_NAME_H_
#define STREAMREG_COMMON_NEAREST_NAME_H_

#include <cstddef>
#include <optional>
#include <span>
#include <string>

#include "absl/strings/string_view.h"

namespace streamreg {

// "Did you mean" for names typed by hand (commands, flags, flag values,
// model names): how far apart two names are, and the one of a list a typo
// most likely meant.

// The optimal string alignment distance: the fewest insertions,
// deletions, substitutions and swaps of two neighbouring characters that
// turn `a` into `b` (a swap counts once: "lsit" is 1 from "list").
std::size_t EditDistance(absl::string_view a, absl::string_view b);

// The candidate nearest `name`, when it is near enough to be a typo of it:
// at most a third of the longer one's characters apart (and at least 1),
// and nearer than any other (the first of equals). None for an exact
// match, or when nothing is that near.
std::optional<std::string> NearestName(absl::string_view name,
                                       std::span<const std::string> candidates);

// " (did you mean <quote>NAME<quote>?)" with NearestName's answer, or "".
std::string DidYouMean(absl::string_view name,
                       std::span<const std::string> candidates,
                       absl::string_view before = "'",
                       absl::string_view after = "'");

}  // namespace streamreg

#endif  // STREAMREG_COMMON_NEAREST_NAME_H_
