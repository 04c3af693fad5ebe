#include "server/hosting/model_registry.h"

#include <mutex>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/model/model_config.h"
#include "spdlog/spdlog.h"

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

HostedModel::Limits ModelRegistry::HostedLimits(
    const ModelConfig& config) const {
  HostedModel::Limits hosted_limits;
  if (config.capacity.policy == CapacityPolicy::kUnbounded) {
    hosted_limits.max_samples = limits_.max_samples_per_model;
  }
  hosted_limits.dedup_window = limits_.dedup_window;
  hosted_limits.max_queued_samples = limits_.max_queued_samples_per_model;
  hosted_limits.max_queue_delay = limits_.max_queue_delay;
  hosted_limits.max_predictions_in_flight =
      limits_.max_predictions_in_flight_per_model;
  return hosted_limits;
}

absl::Status ModelRegistry::CheckFree(const std::string& name) const {
  if (models_.contains(name) || creating_.contains(name)) {
    return absl::AlreadyExistsError(
        absl::StrCat("model '", name, "' already exists"));
  }
  if (const auto failed = failed_.find(name); failed != failed_.end()) {
    return absl::AlreadyExistsError(
        absl::StrCat("model '", name, "' exists but could not be recovered (",
                     failed->second.message(), "); delete it first"));
  }
  return absl::OkStatus();
}

absl::Status ModelRegistry::CheckRoomFor(const std::string& name) const {
  if (absl::Status status = CheckFree(name); !status.ok()) return status;
  if (models_.size() + creating_.size() >= limits_.max_models) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the server holds ", models_.size(),
                     " models, its limit (--max-models)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<HostedModel>> ModelRegistry::Make(
    const std::string& name, ModelConfig config,
    std::vector<std::string> input_names, absl::Time create_time) const {
  if (absl::Status status = ValidateModelName(name); !status.ok()) {
    return status;
  }
  if (!input_names.empty() && input_names.size() != config.input_dim) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.input_names: ", input_names.size(), " names for ",
                     config.input_dim, " inputs"));
  }
  for (std::size_t i = 0; i < input_names.size(); ++i) {
    if (input_names[i].size() > kMaxColumnNameLength) {
      return absl::InvalidArgumentError(
          absl::StrCat("spec.input_names[", i, "]: ", input_names[i].size(),
                       " bytes; at most ", kMaxColumnNameLength));
    }
  }
  absl::StatusOr<std::unique_ptr<Model>> model = Model::Create(config);
  if (!model.ok()) {
    return absl::Status(model.status().code(),
                        absl::StrCat("spec.", model.status().message()));
  }
  if (absl::Status status = CheckLimits((*model)->config()); !status.ok()) {
    return status;
  }
  const HostedModel::Limits limits = HostedLimits((*model)->config());
  return std::make_shared<HostedModel>(name, *std::move(model),
                                       std::move(input_names), create_time,
                                       limits, pools_);
}

absl::StatusOr<std::shared_ptr<HostedModel>> ModelRegistry::MakeRestored(
    RestoredSnapshot restored) const {
  const ModelIdentity& identity = restored.header.identity;
  if (absl::Status status = ValidateModelName(identity.name); !status.ok()) {
    return status;
  }
  if (absl::Status status = CheckLimits(restored.model->config());
      !status.ok()) {
    return status;
  }
  const HostedModel::Limits limits = HostedLimits(restored.model->config());
  auto model = std::make_shared<HostedModel>(
      identity.name, std::move(restored.model), identity.input_names,
      identity.create_time, limits, pools_);
  model->RestoreFromSnapshot(restored.header);
  return model;
}

absl::Status ModelRegistry::Adopt(std::shared_ptr<HostedModel> model) {
  ExclusiveLock lock(mutex_);
  if (absl::Status status = CheckRoomFor(model->name()); !status.ok()) {
    return status;
  }
  models_.emplace(model->name(), std::move(model));
  return absl::OkStatus();
}

void ModelRegistry::Release(absl::string_view name) {
  ExclusiveLock lock(mutex_);
  const auto it = models_.find(name);
  if (it == models_.end()) return;
  it->second->MoveAway();
  models_.erase(it);
}

absl::StatusOr<std::shared_ptr<HostedModel>> ModelRegistry::Create(
    const std::string& name, ModelConfig config,
    std::vector<std::string> input_names) {
  absl::StatusOr<std::shared_ptr<HostedModel>> hosted =
      Make(name, std::move(config), std::move(input_names), absl::Now());
  if (!hosted.ok()) return hosted.status();
  {
    ExclusiveLock lock(mutex_);
    if (absl::Status status = CheckRoomFor(name); !status.ok()) return status;
    creating_.insert(name);
  }
  // The files are written (and fsynced) with the name reserved but no lock
  // held: lookups of other models go on.
  absl::Status stored = absl::OkStatus();
  if (storage_ != nullptr) {
    absl::StatusOr<std::unique_ptr<JournalFile>> journal =
        storage_->CreateJournal((*hosted)->identity());
    if (journal.ok()) {
      (*hosted)->AttachJournal(*std::move(journal));
    } else {
      stored = journal.status();
    }
  }
  ExclusiveLock lock(mutex_);
  creating_.erase(name);
  if (!stored.ok()) return stored;
  models_.emplace(name, *hosted);
  return hosted;
}

std::shared_ptr<HostedModel> ModelRegistry::FindHere(
    absl::string_view name) const {
  SharedLock lock(mutex_);
  const auto it = models_.find(name);
  return it != models_.end() ? it->second : nullptr;
}

absl::StatusOr<std::shared_ptr<HostedModel>> ModelRegistry::Find(
    absl::string_view name) const {
  Elsewhere elsewhere;
  {
    SharedLock lock(mutex_);
    const auto it = models_.find(name);
    if (it != models_.end()) return it->second;
    if (const auto failed = failed_.find(name); failed != failed_.end()) {
      return absl::DataLossError(
          absl::StrCat("model '", name,
                       "' could not be recovered: ", failed->second.message(),
                       " (its files are kept; DeleteModel removes them)"));
    }
    elsewhere = elsewhere_;
  }
  // Asked without the lock (in cluster mode it asks the cluster).
  if (elsewhere) return elsewhere(name);
  return absl::NotFoundError(absl::StrCat("model '", name, "' not found"));
}

void ModelRegistry::SetElsewhere(Elsewhere elsewhere) {
  ExclusiveLock lock(mutex_);
  elsewhere_ = std::move(elsewhere);
}

std::vector<std::shared_ptr<HostedModel>> ModelRegistry::List(
    absl::string_view after, std::size_t limit) const {
  SharedLock lock(mutex_);
  std::vector<std::shared_ptr<HostedModel>> page;
  for (auto it = after.empty() ? models_.begin() : models_.upper_bound(after);
       it != models_.end() && page.size() < limit; ++it) {
    page.push_back(it->second);
  }
  return page;
}

absl::Status ModelRegistry::Delete(absl::string_view name) {
  std::shared_ptr<HostedModel> model;
  bool failed = false;
  {
    SharedLock lock(mutex_);
    const auto it = models_.find(name);
    if (it != models_.end()) {
      model = it->second;
    } else if (failed_.contains(name)) {
      failed = true;
    } else {
      return absl::NotFoundError(absl::StrCat("model '", name, "' not found"));
    }
  }
  if (failed) return DeleteFailed(std::string(name));
  // Logged first (waits for a write in progress): from then on the model
  // is deleted, whatever happens to its files.
  if (absl::Status status = model->Delete(); !status.ok()) return status;
  if (storage_ != nullptr) {
    if (absl::Status status = storage_->Remove(model->name()); !status.ok()) {
      spdlog::warn(
          "event=delete_files_failed model={} error=\"{}\" (the next start "
          "removes them)",
          model->name(), std::string(status.message()));
    }
  }
  ExclusiveLock lock(mutex_);
  const auto it = models_.find(name);
  if (it != models_.end() && it->second == model) models_.erase(it);
  return absl::OkStatus();
}

absl::Status ModelRegistry::DeleteFailed(const std::string& name) {
  if (absl::Status status = storage_->Remove(name); !status.ok()) {
    return status;
  }
  ExclusiveLock lock(mutex_);
  failed_.erase(name);
  return absl::OkStatus();
}

absl::Status ModelRegistry::Recover() {
  if (storage_ == nullptr) return absl::OkStatus();
  absl::StatusOr<std::vector<std::string>> names = storage_->ModelNames();
  if (!names.ok()) return names.status();
  for (const std::string& name : *names) {
    const absl::Time start = absl::Now();
    absl::StatusOr<std::shared_ptr<HostedModel>> model = storage_->Recover(
        name,
        [this](const ModelConfig& config) { return HostedLimits(config); },
        pools_);
    ExclusiveLock lock(mutex_);
    if (model.ok()) {
      spdlog::info("event=recovered model={} samples={} seconds={:.3f}", name,
                   (*model)->model().samples_seen(),
                   absl::ToDoubleSeconds(absl::Now() - start));
      models_.emplace(name, *std::move(model));
    } else if (absl::IsNotFound(model.status())) {
      spdlog::info("event=removed model={} reason=\"{}\"", name,
                   std::string(model.status().message()));
    } else {
      spdlog::error("event=recovery_failed model={} error=\"{}\"", name,
                    std::string(model.status().message()));
      failed_.emplace(name, model.status());
    }
  }
  return absl::OkStatus();
}

std::map<std::string, absl::Status> ModelRegistry::failed() const {
  SharedLock lock(mutex_);
  return {failed_.begin(), failed_.end()};
}

std::size_t ModelRegistry::size() const {
  SharedLock lock(mutex_);
  return models_.size();
}

}  // namespace streamreg
