#include "server/rpc/access_control.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/hosting/model_registry.h"
#include "spdlog/spdlog.h"

namespace streamreg {
namespace {

constexpr absl::string_view kBearerPrefix = "Bearer ";

}  // namespace

absl::Status CallerRights::Check(absl::string_view model,
                                 Permission permission) const {
  if (Allows(model, permission)) return absl::OkStatus();
  spdlog::info("event=permission_denied holder={} model={} needs={}",
               holder_->name, std::string(model),
               std::string(PermissionName(permission)));
  return absl::PermissionDeniedError(absl::StrCat(
      "token of '", holder_->name, "' may not ", PermissionName(permission),
      " model '", model,
      "' (its permissions there: ", holder_->PermissionsOn(model), ")"));
}

AccessControl::AccessControl(std::optional<AccessTokens> tokens)
    : enabled_(tokens.has_value()) {
  if (enabled_) {
    tokens_ = std::make_shared<const AccessTokens>(*std::move(tokens));
  }
}

void AccessControl::Replace(AccessTokens tokens) {
  if (!enabled_) return;
  auto replacement = std::make_shared<const AccessTokens>(std::move(tokens));
  {
    MutexLock lock(&mutex_);
    tokens_.swap(replacement);
  }
  generation_.fetch_add(1, std::memory_order_release);
  // The old table goes here, outside the lock (or with its last caller).
}

CallCredential AccessControl::CredentialOf(
    const grpc::ServerContextBase& context) const {
  if (!enabled_) return {};  // nothing to look up or hash
  const auto& metadata = context.client_metadata();
  const auto found = metadata.find("authorization");
  if (found == metadata.end()) return {};
  const absl::string_view value(found->second.data(), found->second.size());
  if (!absl::StartsWithIgnoreCase(value, kBearerPrefix) ||
      value.size() == kBearerPrefix.size()) {
    return {.kind = CallCredential::Kind::kMalformed, .digest = {}};
  }
  return {.kind = CallCredential::Kind::kBearer,
          .digest = DigestOfToken(value.substr(kBearerPrefix.size()))};
}

absl::StatusOr<CallerRights> AccessControl::Authenticate(
    const CallCredential& credential) const {
  if (!enabled_) return CallerRights();
  switch (credential.kind) {
    case CallCredential::Kind::kNone:
      return absl::UnauthenticatedError(
          "no bearer token: send metadata 'authorization: Bearer <token>'");
    case CallCredential::Kind::kMalformed:
      return absl::UnauthenticatedError(
          "metadata 'authorization' is not 'Bearer <token>'");
    case CallCredential::Kind::kBearer:
      break;
  }
  std::shared_ptr<const AccessTokens> tokens;
  {
    MutexLock lock(&mutex_);
    tokens = tokens_;
  }
  const TokenHolder* holder = tokens->FindDigest(credential.digest);
  if (holder == nullptr) {
    spdlog::info("event=unauthenticated reason=unknown_token");
    return absl::UnauthenticatedError("unknown bearer token");
  }
  return CallerRights(std::move(tokens), holder);
}

absl::Status AccessControl::AuthorizeModel(
    const grpc::ServerContextBase& context, absl::string_view model,
    absl::string_view field, Permission permission) const {
  absl::StatusOr<CallerRights> rights = Authenticate(context);
  if (!rights.ok()) return rights.status();
  if (absl::Status status = ValidateModelName(model, field); !status.ok()) {
    return status;
  }
  return rights->Check(model, permission);
}

}  // namespace streamreg
