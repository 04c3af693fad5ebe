#ifndef STREAMREG_SERVER_RPC_MODEL_STREAM_H_
#define STREAMREG_SERVER_RPC_MODEL_STREAM_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "server/hosting/model_registry.h"
#include "server/rpc/access_control.h"
#include "server/rpc/grpc_status.h"

namespace streamreg {

// The model each message of a client stream addresses: the message's
// model, or the previous message's when it names none — and whether the
// call's token may use it (checked again whenever the model changes or the
// token table is replaced). Counts messages so errors can say which one
// failed ("message 3: ...").
class ModelStream {
 public:
  ModelStream(const ModelRegistry* registry, const AccessControl* access,
              const grpc::ServerContextBase& context, Permission permission)
      : registry_(registry),
        access_(access),
        credential_(access->CredentialOf(context)),
        permission_(permission) {}

  // Whether the call's token is known (before the first message):
  // OK or UNAUTHENTICATED.
  absl::Status Authenticate() { return Reauthenticate(); }

  // The model of the next message, whose model field is `name`.
  absl::StatusOr<std::shared_ptr<HostedModel>> Next(const std::string& name) {
    ++messages_;
    if (name.empty() && model_ == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(Where(), ": model: empty"));
    }
    const std::string& target = name.empty() ? model_->name() : name;
    if (absl::Status status = Authorize(target); !status.ok()) {
      return absl::Status(status.code(),
                          absl::StrCat(Where(), ": ", status.message()));
    }
    if (model_ != nullptr && target == model_->name()) return model_;
    absl::StatusOr<std::shared_ptr<HostedModel>> model =
        registry_->Find(target);
    if (!model.ok()) {
      return absl::Status(
          model.status().code(),
          absl::StrCat(Where(), ": ", model.status().message()));
    }
    model_ = *model;
    return model_;
  }

  // Overload protection for the current message (ModelRegistry::AdmitSamples,
  // AdmitPrediction), its refusal naming the message.
  absl::StatusOr<AdmissionTicket> AdmitSamples(HostedModel& model,
                                               std::uint64_t count) const {
    return Named(registry_->AdmitSamples(model, count));
  }
  absl::StatusOr<AdmissionTicket> AdmitPrediction(HostedModel& model) const {
    return Named(registry_->AdmitPrediction(model));
  }
  void ParkRead(AdmissionTicket& ticket) const { registry_->ParkRead(ticket); }
  absl::StatusOr<AdmissionTicket> AdmitStreamedSamples(
      std::uint64_t count) const {
    return Named(registry_->AdmitStreamedSamples(count));
  }

  // "message N" of the current message (0-based).
  std::string Where() const { return absl::StrCat("message ", messages_ - 1); }
  std::uint64_t messages() const { return messages_; }

 private:
  absl::StatusOr<AdmissionTicket> Named(
      absl::StatusOr<AdmissionTicket> ticket) const {
    if (ticket.ok()) return ticket;
    absl::Status status = ticket.status();
    return WithMessage(status, absl::StrCat(Where(), ": ", status.message()));
  }

  absl::Status Reauthenticate() {
    generation_ = access_->generation();
    authorized_model_.clear();
    absl::StatusOr<CallerRights> rights = access_->Authenticate(credential_);
    if (!rights.ok()) return rights.status();
    rights_ = *std::move(rights);
    return absl::OkStatus();
  }

  absl::Status Authorize(const std::string& model) {
    if (generation_ != access_->generation()) {
      if (absl::Status status = Reauthenticate(); !status.ok()) return status;
    }
    if (model == authorized_model_) return absl::OkStatus();
    if (absl::Status status = ValidateModelName(model, "model"); !status.ok()) {
      return status;
    }
    if (absl::Status status = rights_.Check(model, permission_); !status.ok()) {
      return status;
    }
    authorized_model_ = model;
    return absl::OkStatus();
  }

  const ModelRegistry* registry_;
  const AccessControl* access_;
  const CallCredential credential_;
  const Permission permission_;
  CallerRights rights_;
  std::uint64_t generation_ = 0;
  // The model rights_ were last checked for ("": none yet).
  std::string authorized_model_;
  std::shared_ptr<HostedModel> model_;
  std::uint64_t messages_ = 0;
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_RPC_MODEL_STREAM_H_
