#ifndef STREAMREG_CLIENT_LIB_CLIENT_H_
#define STREAMREG_CLIENT_LIB_CLIENT_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/lib/client_tls.h"
#include "client/lib/errors.h"
#include "client/lib/retry_policy.h"
#include "grpcpp/grpcpp.h"
#include "streamreg/v1/model_service.grpc.pb.h"
#include "streamreg/v1/regression_service.grpc.pb.h"

namespace streamreg {

// A prediction's values, one per target, as a span over the message.
inline std::span<const double> PredictedValues(const v1::Prediction& p) {
  return {p.y().data(), static_cast<std::size_t>(p.y().size())};
}

class ClientRoutes;
class Ingester;
class LearnSession;
struct LearnSessionOptions;
class PredictSession;
class ServerRouter;

struct ClientOptions {
  // host:port of the server, or of several servers of a cluster separated
  // by commas (calls about a model go to the servers that serve it:
  // ServerRouter).
  std::string address = "127.0.0.1:50051";
  // Deadline of each unary call and each Ingest stream.
  absl::Duration timeout = absl::Seconds(60);
  // A read (GetModel, ListModels, GetMetric, Predict) that another server
  // could answer waits this long for a server before it asks the next as
  // well (a paused or stalled replica), and takes the first answer
  // (HedgedRead).
  absl::Duration replica_attempt_timeout = absl::Seconds(1);
  RetryPolicy retry;
  std::size_t max_message_bytes = 64 << 20;
  // Samples per Ingest message.
  std::size_t batch_size = 1000;
  // A TCP connection of this client's own rather than one shared with the
  // process's other clients of the same server (load generators).
  bool own_connection = false;
  // TLS (and the client's certificate for mutual TLS); plaintext if not
  // enabled.
  ClientTls tls;
  // Sent with every call as "authorization: Bearer <token>" (servers with
  // --auth_tokens); empty: none. Use TLS: over plaintext anyone on the
  // path can read it.
  std::string bearer_token;
};

// What a Predict call asks beyond the values: the intervals' coverage
// (PredictRequest.interval_level; the model's if unset), the samples each
// prediction used (PredictRequest.with_neighbors), and what to read after
// (PredictRequest.min_learned: a write's LearnResponse.sequence or
// IngestSummary::num_samples reads it on any server of the model; 0: the
// model as it stands; unset: what the answering server acknowledged).
struct PredictCallOptions {
  std::optional<double> interval_level = std::nullopt;
  bool with_neighbors = false;
  std::optional<std::uint64_t> min_learned = std::nullopt;

  // Sets these on `request`.
  void SetOn(v1::PredictRequest* request) const;
};

// What an Ingester learned, in total.
struct IngestSummary {
  std::uint64_t accepted = 0;
  std::uint64_t duplicates = 0;
  std::uint64_t batches = 0;
  std::uint64_t num_samples = 0;  // the model's samples after the last batch
  std::uint64_t retries = 0;
};

// A typed client of a streamreg server or cluster (ModelService and
// RegressionService). Idempotent calls are retried with exponential backoff
// on UNAVAILABLE, on the model's servers when a cluster names them and on
// the next server when one is unreachable (ServerRouter); samples carry ids
// (assigned here when the caller gives none), so resending a batch whose
// acknowledgement was lost never learns it twice. Thread-safe; sessions
// (Ingester, LearnSession, PredictSession) are used by one thread each.
class Client {
 public:
  explicit Client(ClientOptions options = {});
  // Over an existing channel (tests, custom credentials).
  Client(std::shared_ptr<grpc::Channel> channel, ClientOptions options);
  ~Client();

  absl::StatusOr<v1::Model> CreateModel(const std::string& name,
                                        const v1::ModelSpec& spec);
  absl::StatusOr<v1::Model> GetModel(const std::string& name);
  // Every model (all pages), in name order; of a cluster, every model of
  // the cluster, those the server asked does not serve read from servers
  // that do (a model deleted meanwhile is left out).
  absl::StatusOr<std::vector<v1::Model>> ListModels();
  absl::Status DeleteModel(const std::string& name);
  absl::StatusOr<v1::MetricReport> GetMetric(const std::string& name);
  // Runs a batch refit; progress(done, total) as the server reports it.
  // Returns the stats after the refit. Not retried (it is not cheap).
  absl::StatusOr<v1::ModelStats> Refit(
      const std::string& name,
      const std::function<void(std::uint64_t, std::uint64_t)>& progress = {});

  // Predicts n = x.size() / dim queries (row-major), in requests of at most
  // batch_size queries, as `options` asks (PredictRequest's fields).
  absl::StatusOr<std::vector<v1::Prediction>> Predict(
      const std::string& model, std::span<const double> x, std::size_t dim,
      const PredictCallOptions& options = {});

  // Sessions over the streaming calls.
  std::unique_ptr<Ingester> StartIngest(const std::string& model);
  std::unique_ptr<LearnSession> StartLearn(const std::string& model);
  std::unique_ptr<LearnSession> StartLearn(const std::string& model,
                                           const LearnSessionOptions& options);
  std::unique_ptr<PredictSession> StartPredict(const std::string& model);

  // grpc.health.v1 Check of the whole server (the first that answers):
  // SERVING or an error.
  absl::StatusOr<std::string> Health();
  // Whether one of the servers accepts a connection within `within` (each
  // tried in turn for an equal share): UNAVAILABLE naming them if none
  // does. Calls need not wait for it; a command-line tool asks it first so
  // that a server that is not running is said at once, not after retries.
  absl::Status WaitForServer(absl::Duration within);

  // A fresh sample id, unique to this client (a random 64-bit start,
  // counted up).
  std::uint64_t NextSampleId() { return next_sample_id_++; }
  const ClientOptions& options() const { return options_; }
  // The stubs of the first server (calls about no model in particular).
  v1::ModelService::Stub& models();
  v1::RegressionService::Stub& regression();
  // A context with the call deadline set.
  std::unique_ptr<grpc::ClientContext> NewContext() const;

 private:
  friend class ClientRoutes;  // the sessions' way to the router

  // `call(stubs, attempt)` on the server for `model`, retried by the
  // policy, each attempt where the router says.
  template <class Call>
  absl::Status RetriedFor(const std::string& model, const Call& call);
  // A read about `model` started by `start` (HedgedRead's Start) on a
  // server, asked of the next server each replica_attempt_timeout while
  // none has answered, retried by the policy.
  template <class Response, class Start>
  absl::StatusOr<Response> Read(const std::string& model, const Start& start);
  std::unique_ptr<grpc::ClientContext> NewContext(absl::Duration timeout) const;

  ClientOptions options_;
  // Where calls about each model go (ServerRouter).
  std::unique_ptr<ServerRouter> router_;
  std::atomic<std::uint64_t> next_sample_id_;
};

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_LIB_CLIENT_H_
