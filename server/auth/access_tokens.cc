#include "server/auth/access_tokens.h"

#include <openssl/crypto.h>

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/file_contents.h"
#include "common/sha256.h"
#include "server/hosting/model_registry.h"

namespace streamreg {
namespace {

constexpr std::size_t kMinTokenLength = 16;
constexpr std::size_t kMaxTokenLength = 512;
constexpr Permission kAllPermissions[] = {Permission::kRead, Permission::kWrite,
                                          Permission::kAdmin};

std::uint8_t Bit(Permission permission) {
  return static_cast<std::uint8_t>(permission);
}

// A field of a line as an error may show it: quoted if shorter than a
// token, else only its length (a token in the wrong column must not reach
// the logs).
std::string Shown(absl::string_view field) {
  if (field.size() < kMinTokenLength) return absl::StrCat("'", field, "'");
  return absl::StrCat("of ", field.size(),
                      " characters (not shown: it could be a token)");
}

absl::StatusOr<std::uint8_t> ParsePermissions(absl::string_view text) {
  std::uint8_t permissions = 0;
  for (absl::string_view word : absl::StrSplit(text, ',')) {
    const auto known =
        std::find_if(std::begin(kAllPermissions), std::end(kAllPermissions),
                     [&](Permission p) { return PermissionName(p) == word; });
    if (known == std::end(kAllPermissions)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "permission ", Shown(word), " is not one of read, write, admin"));
    }
    permissions |= Bit(*known);
  }
  return permissions;
}

absl::Status CheckToken(absl::string_view token) {
  if (token.size() < kMinTokenLength || token.size() > kMaxTokenLength) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the token has ", token.size(), " characters; tokens have ",
        kMinTokenLength, " to ", kMaxTokenLength));
  }
  for (const char c : token) {
    if (c < '!' || c > '~') {
      return absl::InvalidArgumentError(
          "the token has a character that is not printable ASCII");
    }
  }
  return absl::OkStatus();
}

// One line's holder (a single grant per prefix), or an error without the
// line's position.
absl::StatusOr<TokenHolder> ParseLine(
    const std::vector<absl::string_view>& fields) {
  if (fields.size() < 4) {
    return absl::InvalidArgumentError(
        "expected NAME TOKEN PERMISSIONS PREFIX [PREFIX ...]");
  }
  if (absl::Status status = CheckToken(fields[1]); !status.ok()) return status;
  absl::StatusOr<std::uint8_t> permissions = ParsePermissions(fields[2]);
  if (!permissions.ok()) return permissions.status();
  TokenHolder holder;
  holder.name = std::string(fields[0]);
  holder.digest = DigestOfToken(fields[1]);
  for (std::size_t i = 3; i < fields.size(); ++i) {
    if (fields[i] != "*") {
      // A prefix no model name can start with is a mistake.
      if (absl::Status status = ValidateModelName(fields[i], "prefix");
          !status.ok()) {
        if (fields[i].size() < kMinTokenLength) return status;
        return absl::InvalidArgumentError(
            absl::StrCat("prefix ", Shown(fields[i]),
                         " is not the start of a model name (letters, "
                         "digits, '.', '_', '-')"));
      }
    }
    holder.grants.push_back(
        {.prefix = fields[i] == "*" ? "" : std::string(fields[i]),
         .permissions = *permissions});
  }
  return holder;
}

bool SameDigest(const TokenDigest& a, const TokenDigest& b) {
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace

absl::string_view PermissionName(Permission permission) {
  switch (permission) {
    case Permission::kRead:
      return "read";
    case Permission::kWrite:
      return "write";
    case Permission::kAdmin:
      return "admin";
  }
  return "?";
}

TokenDigest DigestOfToken(absl::string_view token) { return Sha256(token); }

bool TokenHolder::Allows(absl::string_view model, Permission permission) const {
  for (const ModelGrant& grant : grants) {
    if ((grant.permissions & Bit(permission)) != 0 &&
        absl::StartsWith(model, grant.prefix)) {
      return true;
    }
  }
  return false;
}

std::string TokenHolder::PermissionsOn(absl::string_view model) const {
  std::vector<absl::string_view> names;
  for (const Permission permission : kAllPermissions) {
    if (Allows(model, permission)) names.push_back(PermissionName(permission));
  }
  return names.empty() ? "none" : absl::StrJoin(names, ",");
}

absl::StatusOr<AccessTokens> AccessTokens::Parse(absl::string_view text,
                                                 absl::string_view source) {
  AccessTokens tokens;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = line.substr(0, line.find('#'));
    const std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::ByAnyChar(" \t\r"), absl::SkipEmpty());
    if (fields.empty()) continue;
    const auto failure = [&](absl::string_view what) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, " line ", line_number, ": ", what));
    };
    absl::StatusOr<TokenHolder> parsed = ParseLine(fields);
    if (!parsed.ok()) return failure(parsed.status().message());
    TokenHolder* same_name = nullptr;
    for (TokenHolder& holder : tokens.holders_) {
      const bool same_token = SameDigest(holder.digest, parsed->digest);
      if (holder.name == parsed->name) {
        if (!same_token) {
          return failure(absl::StrCat("'", parsed->name,
                                      "' has a different token on an "
                                      "earlier line"));
        }
        same_name = &holder;
      } else if (same_token) {
        return failure(absl::StrCat("the token of '", parsed->name,
                                    "' is also the token of '", holder.name,
                                    "'"));
      }
    }
    if (same_name == nullptr) {
      tokens.holders_.push_back(*std::move(parsed));
    } else {
      same_name->grants.insert(same_name->grants.end(), parsed->grants.begin(),
                               parsed->grants.end());
    }
  }
  if (tokens.holders_.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": no tokens (every call would be refused)"));
  }
  return tokens;
}

absl::StatusOr<AccessTokens> AccessTokens::Load(const std::string& path) {
  absl::StatusOr<std::string> text =
      ReadSecretFileContents(path, "--auth_tokens");
  if (!text.ok()) return text.status();
  return Parse(*text, absl::StrCat("--auth_tokens ", path));
}

const TokenHolder* AccessTokens::FindDigest(const TokenDigest& digest) const {
  // Every digest is compared, in constant time, whichever matches.
  const TokenHolder* found = nullptr;
  for (const TokenHolder& holder : holders_) {
    if (SameDigest(holder.digest, digest)) found = &holder;
  }
  return found;
}

}  // namespace streamreg
