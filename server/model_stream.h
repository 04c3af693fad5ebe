#ifndef STREAMREG_SERVER_MODEL_STREAM_H_
#define STREAMREG_SERVER_MODEL_STREAM_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "server/model_registry.h"

namespace streamreg {

// The model each message of a client stream addresses: the message's
// model, or the previous message's when it names none. Counts messages so
// errors can say which one failed ("message 3: ...").
class ModelStream {
 public:
  explicit ModelStream(const ModelRegistry* registry) : registry_(registry) {}

  // The model of the next message, whose model field is `name`.
  absl::StatusOr<std::shared_ptr<HostedModel>> Next(const std::string& name) {
    ++messages_;
    if (name.empty() || (model_ != nullptr && name == model_->name())) {
      if (model_ == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat(Where(), ": model: empty"));
      }
      return model_;
    }
    absl::StatusOr<std::shared_ptr<HostedModel>> model = registry_->Find(name);
    if (!model.ok()) {
      return absl::Status(
          model.status().code(),
          absl::StrCat(Where(), ": ", model.status().message()));
    }
    model_ = *model;
    return model_;
  }

  // "message N" of the current message (0-based).
  std::string Where() const { return absl::StrCat("message ", messages_ - 1); }
  std::uint64_t messages() const { return messages_; }

 private:
  const ModelRegistry* registry_;
  std::shared_ptr<HostedModel> model_;
  std::uint64_t messages_ = 0;
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_MODEL_STREAM_H_
