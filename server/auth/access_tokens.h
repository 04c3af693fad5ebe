#ifndef STREAMREG_SERVER_AUTH_ACCESS_TOKENS_H_
#define STREAMREG_SERVER_AUTH_ACCESS_TOKENS_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace streamreg {

// What a token may do with a model. The three do not imply one another:
// a token that should create, feed and query models lists all three.
enum class Permission : std::uint8_t {
  kRead = 1,   // GetModel, GetMetric, ListModels, Predict, PredictStream
  kWrite = 2,  // Ingest, Learn
  kAdmin = 4,  // CreateModel, DeleteModel, Refit
};

// "read", "write" or "admin".
absl::string_view PermissionName(Permission permission);

// SHA-256 of a token: what the table keeps and compares (never the token).
using TokenDigest = std::array<std::uint8_t, 32>;
TokenDigest DigestOfToken(absl::string_view token);

// Permissions on the models whose names start with a prefix.
struct ModelGrant {
  std::string prefix;  // empty: every model
  std::uint8_t permissions = 0;
};

// Who holds a token, and what it may do.
struct TokenHolder {
  std::string name;  // what logs and errors call the holder
  TokenDigest digest = {};
  std::vector<ModelGrant> grants;

  bool Allows(absl::string_view model, Permission permission) const;
  // The permissions this holder has on `model`, e.g. "read" or "none".
  std::string PermissionsOn(absl::string_view model) const;
};

// The bearer tokens the server accepts (--auth_tokens), parsed from a text
// file of lines
//
//   NAME  TOKEN  PERMISSIONS  PREFIX [PREFIX ...]
//
// where PERMISSIONS is a comma-separated subset of read,write,admin and
// each PREFIX grants them on the models whose names start with it ("*":
// every model). '#' starts a comment; blank lines are skipped. A holder may
// have several lines (different permissions on different prefixes), all
// with the same token. Tokens are 16 to 512 printable characters; only
// their SHA-256 digests are kept, and lookups compare every digest in
// constant time (no early exit, no dependence on where they differ).
class AccessTokens {
 public:
  // Errors are InvalidArgument naming `source` and the line; they never
  // contain a token.
  static absl::StatusOr<AccessTokens> Parse(absl::string_view text,
                                            absl::string_view source);
  // Parse of the file at `path` (--auth_tokens), which must not be
  // readable or writable by every user: FailedPrecondition naming its mode
  // if it is.
  static absl::StatusOr<AccessTokens> Load(const std::string& path);

  // The holder of `token`, or nullptr.
  const TokenHolder* Find(absl::string_view token) const {
    return FindDigest(DigestOfToken(token));
  }
  const TokenHolder* FindDigest(const TokenDigest& digest) const;

  std::size_t size() const { return holders_.size(); }

 private:
  std::vector<TokenHolder> holders_;
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_AUTH_ACCESS_TOKENS_H_
