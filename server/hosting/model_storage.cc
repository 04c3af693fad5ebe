#include "server/hosting/model_storage.h"

#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/base/background_priority.h"
#include "core/base/background_thread.h"
#include "core/model/model.h"
#include "server/hosting/model_registry.h"
#include "server/hosting/snapshot_schedule.h"
#include "server/storage/snapshot_reader.h"
#include "spdlog/spdlog.h"

namespace streamreg {

ModelStorage::ModelStorage(std::string data_dir, StorageOptions options)
    : data_dir_(std::move(data_dir)), options_(options) {}

ModelStorage::~ModelStorage() { StopBackground(); }

void ModelStorage::StopBackground() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (syncer_.joinable()) syncer_.join();
  if (snapshotter_.joinable()) snapshotter_.join();
}

JournalFile::Options ModelStorage::JournalOptions() const {
  JournalFile::Options journal;
  journal.file_system = options_.file_system;
  journal.sync = options_.sync;
  journal.segment_bytes = options_.segment_bytes;
  journal.fsync_latency = options_.fsync_latency;
  journal.learn_linger = options_.learn_linger;
  return journal;
}

std::string ModelStorage::ModelDirectory(const std::string& name) const {
  return absl::StrCat(data_dir_, "/models/", name);
}

absl::StatusOr<std::vector<std::string>> ModelStorage::ModelNames() {
  FileSystem* fs = options_.file_system;
  const std::string trash = data_dir_ + "/trash";
  if (absl::Status status = fs->RemoveAll(trash); !status.ok()) return status;
  const std::string models = data_dir_ + "/models";
  for (const std::string& directory : {trash, models}) {
    if (absl::Status status = fs->CreateDirectories(directory); !status.ok()) {
      return status;
    }
  }
  absl::StatusOr<std::vector<std::string>> names = fs->ListDirectory(models);
  if (!names.ok()) return names.status();
  std::erase_if(*names, [](const std::string& name) {
    return !ValidateModelName(name).ok();
  });
  return names;
}

absl::StatusOr<std::shared_ptr<HostedModel>> ModelStorage::Recover(
    const std::string& name, const LimitsFor& limits_for, HostingPools pools) {
  const std::string directory = ModelDirectory(name);
  FileSystem* fs = options_.file_system;
  absl::StatusOr<JournalFile::Contents> contents =
      JournalFile::Recover(directory, fs);
  if (!contents.ok()) return contents.status();

  // Who the model is and its state before the log: the snapshot, or an
  // empty model from the create record.
  std::unique_ptr<Model> model;
  ModelIdentity identity;
  SnapshotHeader header;
  std::size_t first_entry = 0;
  if (contents->has_snapshot) {
    absl::StatusOr<RestoredSnapshot> restored =
        RestoreSnapshot({contents->snapshot_header, contents->snapshot},
                        contents->snapshot_lsn, directory);
    if (!restored.ok()) return restored.status();
    header = std::move(restored->header);
    identity = header.identity;
    model = std::move(restored->model);
  } else {
    const bool created = !contents->entries.empty() &&
                         contents->entries[0].type == kCreateRecord &&
                         contents->entries[0].lsn == 1;
    if (!created) {
      if (contents->entries.empty()) {
        // Its creation never completed (so it was never acknowledged).
        if (absl::Status status = Remove(name); !status.ok()) return status;
        return absl::NotFoundError(
            absl::StrCat("model '", name, "' was never created"));
      }
      return absl::DataLossError(
          absl::StrCat(directory,
                       ": the log does not begin with the "
                       "model's creation"));
    }
    if (absl::Status status =
            DecodeCreate(contents->entries[0].payload, &identity);
        !status.ok()) {
      return absl::DataLossError(absl::StrCat(
          directory, ": malformed create record: ", status.message()));
    }
    absl::StatusOr<std::unique_ptr<Model>> created_model =
        Model::Create(identity.config);
    if (!created_model.ok()) {
      return absl::DataLossError(absl::StrCat(
          directory, ": create record: ", created_model.status().message()));
    }
    model = *std::move(created_model);
    first_entry = 1;
  }
  if (identity.name != name) {
    return absl::DataLossError(
        absl::StrCat(directory, ": holds model '", identity.name, "'"));
  }
  if (!contents->entries.empty() &&
      contents->entries.back().type == kDeleteRecord) {
    if (absl::Status status = Remove(name); !status.ok()) return status;
    return absl::NotFoundError(absl::StrCat("model '", name, "' was deleted"));
  }
  const HostedModel::Limits limits = limits_for(identity.config);
  auto hosted = std::make_shared<HostedModel>(
      name, std::move(model), identity.input_names, identity.create_time,
      limits, pools);
  if (contents->has_snapshot) hosted->RestoreFromSnapshot(header);
  for (std::size_t e = first_entry; e < contents->entries.size(); ++e) {
    if (absl::Status status = hosted->Replay(contents->entries[e]);
        !status.ok()) {
      return absl::DataLossError(
          absl::StrCat(directory, ": ", status.message()));
    }
  }
  absl::StatusOr<std::unique_ptr<JournalFile>> journal =
      JournalFile::Continue(directory, JournalOptions(), *contents);
  if (!journal.ok()) return journal.status();
  hosted->AttachJournal(*std::move(journal));
  return hosted;
}

absl::StatusOr<std::unique_ptr<JournalFile>> ModelStorage::CreateJournal(
    const ModelIdentity& identity) {
  const std::string directory = ModelDirectory(identity.name);
  FileSystem* fs = options_.file_system;
  // A directory left by a creation that never completed.
  if (fs->Exists(directory)) {
    if (absl::Status status = Remove(identity.name); !status.ok()) {
      return status;
    }
  }
  absl::StatusOr<std::unique_ptr<JournalFile>> journal =
      JournalFile::Create(directory, JournalOptions(), identity);
  if (!journal.ok()) (void)fs->RemoveAll(directory);
  return journal;
}

absl::Status ModelStorage::Remove(const std::string& name) {
  FileSystem* fs = options_.file_system;
  const std::string trash = absl::StrCat(data_dir_, "/trash/", name, ".",
                                         absl::ToUnixNanos(absl::Now()));
  if (absl::Status status = fs->Rename(ModelDirectory(name), trash);
      !status.ok()) {
    return status;
  }
  if (absl::Status status = fs->SyncDirectory(data_dir_ + "/models");
      !status.ok()) {
    return status;
  }
  return fs->RemoveAll(trash);
}

void ModelStorage::Start(
    std::function<std::vector<std::shared_ptr<HostedModel>>()> models) {
  models_ = std::move(models);
  if (options_.sync.mode == SyncPolicy::Mode::kInterval) {
    syncer_ = std::thread(&ModelStorage::SyncLoop, this);
  }
  snapshotter_ = std::thread(&ModelStorage::SnapshotLoop, this);
}

bool ModelStorage::Sleep(absl::Duration timeout) {
  std::unique_lock lock(mutex_);
  wake_.wait_for(lock, absl::ToChronoNanoseconds(timeout),
                 [this] { return stopping_.load(); });
  return !stopping_.load();
}

void ModelStorage::SyncLoop() {
  BeginBackgroundThread("journal-sync");
  while (Sleep(options_.sync.interval)) {
    for (const std::shared_ptr<HostedModel>& model : models_()) {
      if (model->journal() == nullptr) continue;
      if (absl::Status status = model->journal()->SyncIfDirty(); !status.ok()) {
        spdlog::error("event=wal_sync_failed model={} error=\"{}\"",
                      model->name(), std::string(status.message()));
      }
    }
  }
}

bool ModelStorage::SnapshotDue(const HostedModel& model) const {
  // A model without a journal (a cluster model: its snapshots go to
  // JetStream) has nothing to snapshot here.
  const JournalFile* journal = model.journal();
  if (journal == nullptr) return false;
  const SnapshotSchedule schedule{options_.snapshot_every_samples,
                                  options_.snapshot_interval};
  return schedule.Due(model, journal->position().lsn != journal->snapshot_lsn(),
                      absl::Now());
}

void ModelStorage::SnapshotLoop() {
  BeginBackgroundThread("snapshots");
  LowerThreadPriority();
  // A model whose snapshot failed (a full disk, say) is retried after a
  // pause, not every round.
  constexpr absl::Duration kRetryAfter = absl::Seconds(10);
  absl::flat_hash_map<const HostedModel*, absl::Time> retry_at;
  while (Sleep(absl::Milliseconds(100))) {
    for (const std::shared_ptr<HostedModel>& model : models_()) {
      if (!SnapshotDue(*model)) continue;
      const absl::Time start = absl::Now();
      if (const auto it = retry_at.find(model.get());
          it != retry_at.end() && start < it->second) {
        continue;
      }
      if (absl::Status status = model->Snapshot(); !status.ok()) {
        spdlog::error("event=snapshot_failed model={} error=\"{}\"",
                      model->name(), std::string(status.message()));
        retry_at[model.get()] = start + kRetryAfter;
        continue;
      }
      retry_at.erase(model.get());
      spdlog::info("event=snapshot model={} samples={} seconds={:.3f}",
                   model->name(), model->model().samples_seen(),
                   absl::ToDoubleSeconds(absl::Now() - start));
    }
  }
}

void ModelStorage::Stop() {
  StopBackground();
  if (!models_) return;
  for (const std::shared_ptr<HostedModel>& model : models_()) {
    if (absl::Status status = model->Snapshot(); !status.ok()) {
      spdlog::error("event=snapshot_failed model={} error=\"{}\"",
                    model->name(), std::string(status.message()));
    }
    if (model->journal() != nullptr) {
      (void)model->journal()->SyncIfDirty();
    }
  }
}

}  // namespace streamreg
