#ifndef STREAMREG_SERVER_CLUSTER_FIT_EXCHANGE_H_
#define STREAMREG_SERVER_CLUSTER_FIT_EXCHANGE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/base/mutex.h"
#include "core/metric/mlkr_map.h"
#include "server/cluster/jetstream_client.h"
#include "server/hosting/hosted_model.h"

// The NATS C client's subscription, kept out of the includers' way.
typedef struct __natsSubscription natsSubscription;

namespace streamreg {

// Carries MLKR fit results between the servers that host replicas of one
// model (docs/cluster.md, "MLKR fits computed once"): each replica starts
// the same fits at the same sample counts and a fit is deterministic, so
// the first server of a model's placement computes each fit and publishes
// its result, and the others take it instead of computing it
// (MlkrFitExchange, MlkrRefresh). Results travel as plain NATS messages,
// not through the log: a result is only a copy of what a replica would
// compute itself, so one lost (a server gone, a message dropped) costs a
// replica that fit's computation once its learner reaches the fit's
// take-over point, never a difference. One per server: one subscription to
// every model's fits, each handed to the replica hosted here.
// Thread-safe.
class FitExchange {
 public:
  // Subscribes to the fits of every model on `client`'s connection.
  // `client` must outlive it.
  static absl::StatusOr<std::unique_ptr<FitExchange>> Start(
      JetStreamClient& client);
  // Unsubscribes (waiting, up to 5 s, for a delivery in progress to end)
  // and stops every replica's sharing.
  ~FitExchange();
  FitExchange(const FitExchange&) = delete;
  FitExchange& operator=(const FitExchange&) = delete;

  // `model`, a replica of the model whose log stream is `log_stream`
  // (LogStream::StreamName: one per model and generation), shares its fits
  // with that stream's other replicas from its next fit on, computing each
  // first while `computes_first` holds; the others' results reach it.
  // Until Remove.
  void Add(const std::string& log_stream,
           const std::shared_ptr<HostedModel>& model,
           std::function<bool()> computes_first) ABSL_LOCKS_EXCLUDED(mutex_);
  // Stops the sharing Add began: the model computes its fits itself.
  void Remove(const std::string& log_stream) ABSL_LOCKS_EXCLUDED(mutex_);

  // Since it started: results published, results received from other
  // servers for a replica hosted here (those taken: the model's
  // mlkr_fits_taken), and messages that were not a result for it.
  struct Counters {
    std::uint64_t published = 0;
    std::uint64_t received = 0;
    std::uint64_t refused = 0;
  };
  Counters counters() const;

  // The subject a model's fits travel on.
  static std::string Subject(absl::string_view log_stream);
  // A result's bytes: the exchange that published it (its sender id: a
  // server skips its own), the fit (the samples seen at its start), the
  // maps.
  static std::string Encode(std::uint64_t sender, std::uint64_t fit,
                            const std::vector<MlkrMap>& maps);
  // DATA_LOSS unless `payload` is a result of maps over `dim` inputs.
  static absl::Status Decode(absl::string_view payload, std::size_t dim,
                             std::uint64_t* sender, std::uint64_t* fit,
                             std::vector<MlkrMap>* maps);

 private:
  class ReplicaFits;
  struct Hosted {
    std::weak_ptr<HostedModel> model;
    std::shared_ptr<ReplicaFits> fits;
  };

  explicit FitExchange(JetStreamClient& client);
  // From a replica here: its result, to the others.
  void Publish(const std::string& subject, std::uint64_t fit,
               const std::vector<MlkrMap>& maps);
  // On the subscription's thread: a result published for `subject`.
  void Received(absl::string_view subject, absl::string_view payload)
      ABSL_LOCKS_EXCLUDED(mutex_);
  static void OnMessage(natsConnection* connection,
                        natsSubscription* subscription, natsMsg* message,
                        void* self);
  // The subscription closed and its handler returned for the last time.
  static void OnClosed(void* self) ABSL_LOCKS_EXCLUDED(mutex_);

  JetStreamClient& client_;
  const std::uint64_t id_;  // random: this exchange's results
  natsSubscription* subscription_ = nullptr;
  mutable Mutex mutex_;
  std::map<std::string, Hosted, std::less<>> hosted_ ABSL_GUARDED_BY(mutex_);
  bool closed_ ABSL_GUARDED_BY(mutex_) = false;
  CondVar closed_changed_;
  std::atomic<std::uint64_t> published_{0};
  std::atomic<std::uint64_t> received_{0};
  std::atomic<std::uint64_t> refused_{0};
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_CLUSTER_FIT_EXCHANGE_H_
