#include "server/hosted_model.h"

#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace streamreg {

HostedModel::HostedModel(std::string name, std::unique_ptr<Model> model,
                         std::vector<std::string> input_names,
                         absl::Time create_time, Limits limits,
                         WorkerPool* pool)
    : name_(std::move(name)),
      model_(std::move(model)),
      input_names_(std::move(input_names)),
      create_time_(create_time),
      limits_(limits),
      writes_(SerialQueue::Create(pool)),
      recent_ids_(limits.dedup_window) {}

absl::Status HostedModel::CheckWritable() const {
  if (deleted()) {
    return absl::NotFoundError(absl::StrCat("model '", name_, "' was deleted"));
  }
  return absl::OkStatus();
}

absl::Status HostedModel::CheckDistinctIds(std::span<const Sample> batch) {
  absl::flat_hash_map<std::uint64_t, std::size_t> first_with_id;
  for (std::size_t s = 0; s < batch.size(); ++s) {
    if (batch[s].sample_id == 0) continue;
    const auto [it, inserted] = first_with_id.emplace(batch[s].sample_id, s);
    if (!inserted) {
      return absl::InvalidArgumentError(
          absl::StrCat("samples[", s, "].sample_id: ", batch[s].sample_id,
                       " repeats samples[", it->second, "]"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<LearnOutcome> HostedModel::Learn(
    std::span<const Sample> batch, std::vector<Prediction>* before) {
  if (absl::Status status = model_->Validate(batch); !status.ok()) {
    return status;
  }
  if (absl::Status status = CheckDistinctIds(batch); !status.ok()) {
    return status;
  }
  std::lock_guard lock(write_mutex_);
  if (absl::Status status = CheckWritable(); !status.ok()) return status;

  LearnOutcome outcome;
  outcome.sequence.resize(batch.size());
  outcome.duplicate.resize(batch.size());
  std::vector<Sample> fresh;
  std::vector<std::size_t> fresh_index;
  fresh.reserve(batch.size());
  for (std::size_t s = 0; s < batch.size(); ++s) {
    const std::uint64_t id = batch[s].sample_id;
    if (const auto seen = id == 0 ? std::nullopt : recent_ids_.Find(id)) {
      outcome.duplicate[s] = true;
      outcome.sequence[s] = *seen;
      ++outcome.duplicates;
      continue;
    }
    outcome.sequence[s] = num_samples_ + fresh.size() + 1;
    fresh.push_back(batch[s]);
    fresh_index.push_back(s);
  }
  const Capacity& capacity = model_->config().capacity;
  if (limits_.max_samples != 0 &&
      capacity.policy == CapacityPolicy::kUnbounded &&
      num_samples_ + fresh.size() > limits_.max_samples) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "model '", name_, "' holds ", num_samples_, " samples; ", fresh.size(),
        " more would pass the server's limit of ", limits_.max_samples,
        " (--max-samples-per-model); a window or reservoir capacity keeps a "
        "model within it"));
  }

  std::vector<Prediction> fresh_before;
  if (absl::Status status =
          model_->Learn(fresh, before != nullptr ? &fresh_before : nullptr);
      !status.ok()) {
    return status;
  }
  for (std::size_t f = 0; f < fresh.size(); ++f) {
    recent_ids_.Remember(fresh[f].sample_id, outcome.sequence[fresh_index[f]]);
  }
  num_samples_ += fresh.size();
  outcome.accepted = fresh.size();
  outcome.num_samples = num_samples_;
  duplicate_samples_.fetch_add(outcome.duplicates, std::memory_order_relaxed);

  if (before != nullptr) {
    before->resize(batch.size());
    for (std::size_t f = 0; f < fresh.size(); ++f) {
      (*before)[fresh_index[f]] = std::move(fresh_before[f]);
    }
    for (std::size_t s = 0; s < batch.size(); ++s) {
      if (!outcome.duplicate[s]) continue;
      absl::StatusOr<Prediction> now = model_->Predict(batch[s].x);
      if (!now.ok()) return now.status();
      (*before)[s] = *std::move(now);
    }
  }
  return outcome;
}

absl::Status HostedModel::Refit(
    const std::function<void(std::size_t, std::size_t)>& progress) {
  std::lock_guard lock(write_mutex_);
  if (absl::Status status = CheckWritable(); !status.ok()) return status;
  return model_->Refit(progress);
}

absl::Status HostedModel::Predict(
    std::span<const std::span<const double>> queries,
    std::vector<Prediction>* out) const {
  if (model_->samples_stored() == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("model '", name_, "' has no samples to predict from"));
  }
  return model_->Predict(queries, out);
}

void HostedModel::MarkDeleted() {
  std::lock_guard lock(write_mutex_);
  deleted_.store(true, std::memory_order_release);
}

}  // namespace streamreg
