// Fuzzes the bearer-token table parser (--auth_tokens, reread on SIGHUP).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "server/auth/access_tokens.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  using streamreg::AccessTokens;
  const absl::string_view text = streamreg::AsText(data, size);
  absl::StatusOr<AccessTokens> tokens = AccessTokens::Parse(text, "fuzz");
  // The NAME TOKEN ... fields of each line that has them.
  std::vector<std::pair<std::string, std::string>> lines;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = line.substr(0, line.find('#'));
    const std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::ByAnyChar(" \t\r"), absl::SkipEmpty());
    if (fields.size() >= 2) lines.emplace_back(fields[0], fields[1]);
  }
  if (!tokens.ok()) {
    const absl::string_view message = tokens.status().message();
    FUZZ_CHECK(tokens.status().code() == absl::StatusCode::kInvalidArgument);
    FUZZ_CHECK(absl::StartsWith(message, "fuzz"));
    // An error never shows a token (a token is at least 16 characters),
    // unless that text is also within a holder's name as errors show it,
    // quoted (a "token" ending in a quote can be the end of a shown name).
    for (const auto& [name, token] : lines) {
      bool in_a_name = false;
      for (const auto& line : lines) {
        in_a_name |=
            absl::StrContains(absl::StrCat("'", line.first, "'"), token);
      }
      FUZZ_CHECK(token.size() < 16 || in_a_name ||
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
