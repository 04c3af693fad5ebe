// Fuzzes the bearer-token table parser (--auth_tokens, reread on SIGHUP).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "server/auth/access_tokens.h"
#include "tests/fuzz/fuzz_support.h"

namespace {
constexpr std::size_t kShortestToken = 16;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  using streamreg::AccessTokens;
  const absl::string_view text = streamreg::AsText(data, size);
  absl::StatusOr<AccessTokens> tokens = AccessTokens::Parse(text, "fuzz");
  // The NAME TOKEN ... fields of each line that has them, and the text an
  // error may show of them: names, and shorter fields (a permission word, a
  // prefix) than a token can be, each quoted.
  std::vector<std::pair<std::string, std::string>> lines;
  std::vector<std::string> shown;
  const auto show = [&](absl::string_view text) {
    shown.push_back(absl::StrCat("'", text, "'"));
  };
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = line.substr(0, line.find('#'));
    const std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::ByAnyChar(" \t\r"), absl::SkipEmpty());
    if (fields.size() < 2) continue;
    lines.emplace_back(fields[0], fields[1]);
    show(fields[0]);
    for (std::size_t i = 2; i < fields.size(); ++i) {
      if (fields[i].size() < kShortestToken) show(fields[i]);
      for (absl::string_view word : absl::StrSplit(fields[i], ',')) {
        if (word.size() < kShortestToken) show(word);
      }
    }
  }
  if (!tokens.ok()) {
    const absl::string_view message = tokens.status().message();
    FUZZ_CHECK(tokens.status().code() == absl::StatusCode::kInvalidArgument);
    FUZZ_CHECK(absl::StartsWith(message, "fuzz"));
    // An error never shows a token, unless that text is also within quoted
    // text the error may show (a "token" with quotes in it can be made of a
    // quoted short field, or the end of a quoted name).
    for (const auto& line : lines) {
      const std::string& token = line.second;
      const bool in_shown_text = std::any_of(
          shown.begin(), shown.end(),
          [&](const std::string& s) { return absl::StrContains(s, token); });
      FUZZ_CHECK(token.size() < kShortestToken || in_shown_text ||
                 !absl::StrContains(message, token));
    }
    return 0;
  }
  // Every line's token is found, held by that line's holder.
  FUZZ_CHECK(tokens->size() <= lines.size());
  for (const auto& [name, token] : lines) {
    const streamreg::TokenHolder* holder = tokens->Find(token);
    FUZZ_CHECK(holder != nullptr && holder->name == name);
  }
  return 0;
}
