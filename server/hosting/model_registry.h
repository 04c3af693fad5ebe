#ifndef STREAMREG_SERVER_HOSTING_MODEL_REGISTRY_H_
#define STREAMREG_SERVER_HOSTING_MODEL_REGISTRY_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/base/writer_priority_mutex.h"
#include "core/model/model_config.h"
#include "server/hosting/hosted_model.h"
#include "server/hosting/model_storage.h"
#include "server/hosting/worker_pool.h"
#include "server/storage/snapshot_reader.h"

namespace streamreg {

// The server's limits on what clients may create.
struct RegistryLimits {
  std::size_t max_models = 1000;
  std::uint64_t max_samples_per_model = 10'000'000;  // 0 = no limit
  std::size_t dedup_window = 65536;  // sample ids remembered per model
  // Overload protection (AdmissionGate; 0 = no limit): samples received
  // and not yet through their model's write queue, and reads being
  // answered (predictions; model reads count in the server's), past which
  // calls are refused at once with RESOURCE_EXHAUSTED. A queued sample
  // costs about 8 * (inputs + targets) + 60 bytes and waits for those
  // ahead of it to be learned.
  std::uint64_t max_queued_samples = 1 << 15;
  std::uint64_t max_queued_samples_per_model = 1 << 13;
  std::uint64_t max_predictions_in_flight = 8;
  std::uint64_t max_predictions_in_flight_per_model = 8;
  // A model's queued samples are also limited to what it learns in this
  // long at the rate it learns now, so that what is admitted waits about
  // this long at most however slow the model is (zero: counts only).
  absl::Duration max_queue_delay = absl::Seconds(1);
};

// OK for 1 to 128 letters, digits, '.', '_' or '-' not starting with '.'
// (names become file names); the error names `field`.
absl::Status ValidateModelName(absl::string_view name,
                               absl::string_view field = "name");

// The models a server hosts, by name. Lookups share a lock and return a
// reference-counted model, so a model deleted while a call uses it stays
// valid for that call (its writes then fail with NOT_FOUND). With storage,
// models are created on disk, recovered from it and removed from it.
class ModelRegistry {
 public:
  ModelRegistry(RegistryLimits limits, HostingPools pools,
                ModelStorage* storage = nullptr)
      : limits_(limits), pools_(pools), storage_(storage) {}

  // Reads every model of the storage back. A model that cannot be read is
  // kept as failed: calls naming it get DATA_LOSS with the file and offset
  // until it is deleted. Errors only when the data directory itself cannot
  // be read.
  absl::Status Recover();

  // INVALID_ARGUMENT for a bad name or config (the field named), or input
  // names that are not empty or one per input; ALREADY_EXISTS; and
  // RESOURCE_EXHAUSTED past max_models or a capacity above the sample
  // limit.
  absl::StatusOr<std::shared_ptr<HostedModel>> Create(
      const std::string& name, ModelConfig config,
      std::vector<std::string> input_names);
  absl::StatusOr<std::shared_ptr<HostedModel>> Find(
      absl::string_view name) const;
  // The model if it is hosted here, else null (asking nobody else).
  std::shared_ptr<HostedModel> FindHere(absl::string_view name) const;

  // Cluster mode, where models are hosted from their replicated logs
  // rather than created here (docs/cluster.md):
  // A model as Create would make it, validated alike, but not hosted.
  absl::StatusOr<std::shared_ptr<HostedModel>> Make(
      const std::string& name, ModelConfig config,
      std::vector<std::string> input_names, absl::Time create_time) const;
  // A model as a snapshot of it saved it (its newest in JetStream), its
  // limits checked as Make checks them, but not hosted.
  absl::StatusOr<std::shared_ptr<HostedModel>> MakeRestored(
      RestoredSnapshot restored) const;
  // Hosts a model that Make made; ALREADY_EXISTS if the name is taken.
  absl::Status Adopt(std::shared_ptr<HostedModel> model);
  // No longer hosts `name` (MoveAway): it is served elsewhere.
  void Release(absl::string_view name);
  // Why a model that is not hosted here cannot be found: the status Find
  // answers for `name` instead of NOT_FOUND (in cluster mode, where it is
  // served). May change while the registry is used (joining a cluster).
  using Elsewhere = std::function<absl::Status(absl::string_view name)>;
  void SetElsewhere(Elsewhere elsewhere) ABSL_LOCKS_EXCLUDED(mutex_);
  // Up to `limit` models with names after `after` (all when empty), in
  // name order.
  std::vector<std::shared_ptr<HostedModel>> List(absl::string_view after,
                                                 std::size_t limit) const;
  // Also removes the model's files (a failed model's too).
  absl::Status Delete(absl::string_view name);
  std::size_t size() const;
  // Models that could not be recovered, with why.
  std::map<std::string, absl::Status> failed() const;
  const RegistryLimits& limits() const { return limits_; }

  // Overload protection: admits `count` samples of a write to `model`
  // (held until they are through its write queue) or one prediction on it
  // (held until answered), within the model's limit and the server's;
  // RESOURCE_EXHAUSTED with a retry hint (RetryAfter) naming the limit.
  absl::StatusOr<AdmissionTicket> AdmitSamples(HostedModel& model,
                                               std::uint64_t count) const {
    return AdmissionTicket::Admit({&model.queued_samples(), &queued_samples_},
                                  count);
  }
  // A read of a model's state that waits for learning: one of the
  // server's reads in flight, and for one model's figures (GetModel,
  // GetMetric: `model`) one of its model's as well (ListModels: null).
  absl::StatusOr<AdmissionTicket> AdmitRead(HostedModel* model) const {
    if (model == nullptr) {
      return AdmissionTicket::Admit({&predictions_in_flight_}, 1);
    }
    return AdmissionTicket::Admit(
        {&model->predictions_in_flight(), &predictions_in_flight_}, 1);
  }
  // A Learn stream's samples count in the server's limit only: a stream
  // holds one message (a few ticks' samples) at a time, and it goes ahead
  // of Ingest batches in its model's write queue (LearnBatcher), so batches
  // filling the model's share neither delay nor refuse it.
  absl::StatusOr<AdmissionTicket> AdmitStreamedSamples(
      std::uint64_t count) const {
    return AdmissionTicket::Admit({&queued_samples_}, count);
  }
  absl::StatusOr<AdmissionTicket> AdmitPrediction(HostedModel& model) const {
    return AdmissionTicket::Admit(
        {&model.predictions_in_flight(), &predictions_in_flight_}, 1);
  }
  // A read (a prediction, a model's figures) parked until its model has
  // learned what it waits for (PostRead) gives back its place among the
  // server's reads in flight, keeping its model's: a model whose learning
  // is behind holds no more than its own share.
  void ParkRead(AdmissionTicket& ticket) const {
    ticket.ReleaseAt(predictions_in_flight_);
  }
  const AdmissionGate& queued_samples() const { return queued_samples_; }
  const AdmissionGate& predictions_in_flight() const {
    return predictions_in_flight_;
  }

 private:
  absl::Status CheckLimits(const ModelConfig& config) const;
  HostedModel::Limits HostedLimits(const ModelConfig& config) const;
  // ALREADY_EXISTS if `name` is taken (hosted, failed or being created).
  absl::Status CheckFree(const std::string& name) const
      ABSL_SHARED_LOCKS_REQUIRED(mutex_);
  // CheckFree, and RESOURCE_EXHAUSTED at max_models.
  absl::Status CheckRoomFor(const std::string& name) const
      ABSL_SHARED_LOCKS_REQUIRED(mutex_);
  absl::Status DeleteFailed(const std::string& name)
      ABSL_LOCKS_EXCLUDED(mutex_);

  const RegistryLimits limits_;
  // Counters only (atomic), so admitting is not a change of the registry.
  mutable AdmissionGate queued_samples_{"samples queued on the server",
                                        "--max-queued-samples",
                                        limits_.max_queued_samples};
  mutable AdmissionGate predictions_in_flight_{
      "reads in flight on the server", "--max-predictions-in-flight",
      limits_.max_predictions_in_flight};
  const HostingPools pools_;
  ModelStorage* const storage_;
  mutable WriterPriorityMutex mutex_;  // held shared by lookups
  std::map<std::string, std::shared_ptr<HostedModel>, std::less<>> models_
      ABSL_GUARDED_BY(mutex_);
  std::map<std::string, absl::Status, std::less<>> failed_
      ABSL_GUARDED_BY(mutex_);
  // Names reserved while their files are being created.
  std::set<std::string, std::less<>> creating_ ABSL_GUARDED_BY(mutex_);
  Elsewhere elsewhere_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_HOSTING_MODEL_REGISTRY_H_
