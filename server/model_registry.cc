#include "server/model_registry.h"

#include <mutex>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace streamreg {
namespace {

constexpr std::size_t kMaxNameLength = 128;

bool IsNameCharacter(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' ||
         c == '_' || c == '-';
}

}  // namespace

absl::Status ValidateModelName(absl::string_view name,
                               absl::string_view field) {
  if (name.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": empty"));
  }
  if (name.size() > kMaxNameLength) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": ", name.size(),
                                                   " characters (at most ",
                                                   kMaxNameLength, ")"));
  }
  for (char c : name) {
    if (!IsNameCharacter(c)) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": '", name,
                       "' may contain only letters, digits, '.', '_' and '-'"));
    }
  }
  if (name.front() == '.') {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": '", name, "' starts with '.'"));
  }
  return absl::OkStatus();
}

absl::Status ModelRegistry::CheckLimits(const ModelConfig& config) const {
  const std::uint64_t max_samples = limits_.max_samples_per_model;
  if (max_samples != 0 &&
      config.capacity.policy != CapacityPolicy::kUnbounded &&
      config.capacity.limit > max_samples) {
    return absl::ResourceExhaustedError(
        absl::StrCat("spec.capacity.limit: ", config.capacity.limit,
                     " samples is above the server's limit of ", max_samples,
                     " (--max-samples-per-model)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<HostedModel>> ModelRegistry::Create(
    const std::string& name, ModelConfig config,
    std::vector<std::string> input_names) {
  if (absl::Status status = ValidateModelName(name); !status.ok()) {
    return status;
  }
  if (!input_names.empty() && input_names.size() != config.input_dim) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.input_names: ", input_names.size(), " names for ",
                     config.input_dim, " inputs"));
  }
  absl::StatusOr<std::unique_ptr<Model>> model = Model::Create(config);
  if (!model.ok()) {
    return absl::Status(model.status().code(),
                        absl::StrCat("spec.", model.status().message()));
  }
  if (absl::Status status = CheckLimits((*model)->config()); !status.ok()) {
    return status;
  }
  HostedModel::Limits hosted_limits;
  if ((*model)->config().capacity.policy == CapacityPolicy::kUnbounded) {
    hosted_limits.max_samples = limits_.max_samples_per_model;
  }
  hosted_limits.dedup_window = limits_.dedup_window;

  std::unique_lock lock(mutex_);
  if (models_.contains(name)) {
    return absl::AlreadyExistsError(
        absl::StrCat("model '", name, "' already exists"));
  }
  if (models_.size() >= limits_.max_models) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the server holds ", models_.size(),
                     " models, its limit (--max-models)"));
  }
  auto hosted = std::make_shared<HostedModel>(
      name, *std::move(model), std::move(input_names), absl::Now(),
      hosted_limits, pool_);
  models_.emplace(name, hosted);
  return hosted;
}

absl::StatusOr<std::shared_ptr<HostedModel>> ModelRegistry::Find(
    absl::string_view name) const {
  std::shared_lock lock(mutex_);
  const auto it = models_.find(name);
  if (it == models_.end()) {
    return absl::NotFoundError(absl::StrCat("model '", name, "' not found"));
  }
  return it->second;
}

std::vector<std::shared_ptr<HostedModel>> ModelRegistry::List(
    absl::string_view after, std::size_t limit) const {
  std::shared_lock lock(mutex_);
  std::vector<std::shared_ptr<HostedModel>> page;
  for (auto it = after.empty() ? models_.begin() : models_.upper_bound(after);
       it != models_.end() && page.size() < limit; ++it) {
    page.push_back(it->second);
  }
  return page;
}

absl::Status ModelRegistry::Delete(absl::string_view name) {
  std::shared_ptr<HostedModel> removed;
  {
    std::unique_lock lock(mutex_);
    const auto it = models_.find(name);
    if (it == models_.end()) {
      return absl::NotFoundError(absl::StrCat("model '", name, "' not found"));
    }
    removed = std::move(it->second);
    models_.erase(it);
  }
  removed->MarkDeleted();  // waits for a write in progress
  return absl::OkStatus();
}

std::size_t ModelRegistry::size() const {
  std::shared_lock lock(mutex_);
  return models_.size();
}

}  // namespace streamreg
