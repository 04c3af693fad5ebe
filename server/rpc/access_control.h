#ifndef STREAMREG_SERVER_RPC_ACCESS_CONTROL_H_
#define STREAMREG_SERVER_RPC_ACCESS_CONTROL_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/base/mutex.h"
#include "grpcpp/server_context.h"
#include "server/auth/access_tokens.h"

namespace streamreg {

// What a call presented: its "authorization: Bearer <token>" metadata, kept
// as the token's digest (the token itself is not kept).
struct CallCredential {
  enum class Kind { kNone, kMalformed, kBearer };
  Kind kind = Kind::kNone;
  TokenDigest digest = {};
};

// What an authenticated caller may do, under the token table it was
// authenticated with (kept alive here while the caller holds it).
class CallerRights {
 public:
  // Everything (access control off).
  CallerRights() = default;
  CallerRights(std::shared_ptr<const AccessTokens> tokens,
               const TokenHolder* holder)
      : tokens_(std::move(tokens)), holder_(holder) {}

  bool Allows(absl::string_view model, Permission permission) const {
    return holder_ == nullptr || holder_->Allows(model, permission);
  }
  // OK, or PERMISSION_DENIED naming the holder, the model and what the
  // holder may do with it.
  absl::Status Check(absl::string_view model, Permission permission) const;

 private:
  std::shared_ptr<const AccessTokens> tokens_;
  const TokenHolder* holder_ = nullptr;
};

// Bearer-token access control of the streamreg services (--auth_tokens):
// authenticates calls by their token and checks their permission on the
// model they address. Off (every call allowed) when made without tokens.
// The token table can be replaced while serving (SIGHUP); calls started
// before see the new table at their next authorization (generation()).
// Health and reflection do not go through it. Thread-safe.
class AccessControl {
 public:
  AccessControl() = default;
  explicit AccessControl(std::optional<AccessTokens> tokens);

  bool enabled() const { return enabled_; }
  // Replaces the token table (only when enabled).
  void Replace(AccessTokens tokens);
  // Counts replacements.
  std::uint64_t generation() const {
    return generation_.load(std::memory_order_acquire);
  }

  // What the call presented (nothing, when access control is off).
  CallCredential CredentialOf(const grpc::ServerContextBase& context) const;

  // The caller's rights, or UNAUTHENTICATED (no token, a malformed
  // authorization, a token not in the table).
  absl::StatusOr<CallerRights> Authenticate(
      const CallCredential& credential) const;
  // The same for the credential a call presents (CredentialOf).
  absl::StatusOr<CallerRights> Authenticate(
      const grpc::ServerContextBase& context) const {
    return Authenticate(CredentialOf(context));
  }
  // Authenticate the call; then the model's name (the request's `field`)
  // must be valid (else INVALID_ARGUMENT), and the caller's rights must
  // Check.
  absl::Status AuthorizeModel(const grpc::ServerContextBase& context,
                              absl::string_view model, absl::string_view field,
                              Permission permission) const;

 private:
  bool enabled_ = false;
  mutable Mutex mutex_;
  std::shared_ptr<const AccessTokens> tokens_ ABSL_GUARDED_BY(mutex_);
  std::atomic<std::uint64_t> generation_ = 0;
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_RPC_ACCESS_CONTROL_H_
