#ifndef STREAMREG_SERVER_HOSTING_MODEL_STORAGE_H_
#define STREAMREG_SERVER_HOSTING_MODEL_STORAGE_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/io/file_system.h"
#include "server/hosting/hosted_model.h"
#include "server/hosting/worker_pool.h"
#include "server/storage/journal_file.h"
#include "server/storage/sync_policy.h"
#include "server/telemetry/latency_histogram.h"

namespace streamreg {

// How models are kept on disk (streamreg-server's durability flags).
struct StorageOptions {
  FileSystem* file_system = FileSystem::Default();
  SyncPolicy sync;
  // A log segment is closed and the next begun past this size.
  std::uint64_t segment_bytes = 64 << 20;
  // A model is snapshotted once this many samples were learned since its
  // last snapshot, or snapshot_interval after it if anything was logged
  // (and on a clean shutdown), waiting a while for background work to
  // finish (SnapshotSchedule). Recovery replays at most about twice
  // snapshot_every_samples samples of log per model.
  std::uint64_t snapshot_every_samples = 100'000;
  absl::Duration snapshot_interval = absl::Minutes(10);
  // Where the logs' fsyncs are timed (none: not timed).
  LatencyHistogram* fsync_latency = nullptr;
  // Under --sync=always, how long a Learn stream's sample may wait to be
  // reported durable, sharing an fsync with the samples of the meanwhile
  // (JournalFile::learn_linger; 0: an fsync per group).
  absl::Duration learn_linger = absl::Milliseconds(5);
};

// The models of a data directory on disk (docs/storage.md):
//   <data>/models/<name>/   each model's JournalFile (log and snapshots)
//   <data>/trash/           models being deleted
// Creates and removes model directories, recovers models at start, and
// runs the background work: fsyncing the logs under --sync=interval and
// snapshotting models that are due.
class ModelStorage {
 public:
  ModelStorage(std::string data_dir, StorageOptions options);
  ~ModelStorage();

  // The names of the models on disk (finishing deletions that a crash
  // interrupted).
  absl::StatusOr<std::vector<std::string>> ModelNames();

  // How a recovered model is hosted: its limits, from its configuration.
  using LimitsFor = std::function<HostedModel::Limits(const ModelConfig&)>;
  // One model read back: the newest snapshot, then the log after it,
  // replayed; its journal then goes on. NOT_FOUND if its directory holds a
  // model that was never acknowledged as created, or whose deletion was
  // logged (the files are removed); DATA_LOSS if damaged (files kept).
  absl::StatusOr<std::shared_ptr<HostedModel>> Recover(
      const std::string& name, const LimitsFor& limits_for, HostingPools pools);

  // A new model's journal (its create record fsynced).
  absl::StatusOr<std::unique_ptr<JournalFile>> CreateJournal(
      const ModelIdentity& identity);
  // Removes a model's files: renamed into trash/ (atomic), then deleted.
  absl::Status Remove(const std::string& name);

  // Starts the syncer (--sync=interval) and the snapshotter over the
  // models `models` returns.
  void Start(std::function<std::vector<std::shared_ptr<HostedModel>>()> models);
  // Stops both, then snapshots every model with unsaved records and
  // fsyncs every log (a clean shutdown).
  void Stop();
  // Stops both and nothing more (before the models' source goes away; the
  // destructor does it too).
  void StopBackground();

  const StorageOptions& options() const { return options_; }
  std::string ModelDirectory(const std::string& name) const;

 private:
  JournalFile::Options JournalOptions() const;
  void SyncLoop();
  void SnapshotLoop();
  bool SnapshotDue(const HostedModel& model) const;
  // Waits up to `timeout`; false once stopping.
  bool Sleep(absl::Duration timeout);

  const std::string data_dir_;
  const StorageOptions options_;
  std::function<std::vector<std::shared_ptr<HostedModel>>()> models_;
  // Wakes the background loops when stopping. std::condition_variable
  // times its waits on the steady clock, so a wall-clock jump cannot
  // stretch or shorten the sync interval (absl::CondVar's timed waits use
  // the wall clock). stopping_ is set under mutex_ so that no wake-up is
  // lost.
  std::mutex mutex_;
  std::condition_variable wake_;
  std::atomic<bool> stopping_ = false;
  std::thread syncer_;
  std::thread snapshotter_;
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_HOSTING_MODEL_STORAGE_H_
