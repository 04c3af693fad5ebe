#ifndef STREAMREG_SERVER_CLUSTER_MODEL_CREATION_H_
#define STREAMREG_SERVER_CLUSTER_MODEL_CREATION_H_

#include <atomic>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "server/cluster/jetstream_client.h"
#include "server/cluster/log_stream.h"
#include "server/cluster/membership.h"
#include "server/cluster/placement_store.h"
#include "server/cluster/stream_janitor.h"
#include "server/storage/journal_records.h"

namespace streamreg {

// Creating and deleting a model in the cluster, as far as the placements
// and its log go (hosting it is the servers' reconcile): a create places
// the model on the live servers rendezvous hashing picks, with a log of a
// new generation (whatever an earlier model of the name left is never
// read), makes that log, appends the create entry and marks the placement
// created; a delete empties the placement. Each retries while the cluster
// elects, for up to `write_timeout`, and starts again from the placement
// as it is when another change came first. Thread-safe.
class ModelCreation {
 public:
  struct Options {
    // Servers per model.
    int replicas = 3;
    // How each model's log is made.
    LogStream::Options log;
    absl::Duration write_timeout = absl::Seconds(10);
  };

  // All must outlive it.
  ModelCreation(JetStreamClient& client, PlacementStore& placements,
                Membership& membership, StreamJanitor& janitor, Options options)
      : client_(client),
        placements_(placements),
        membership_(membership),
        janitor_(janitor),
        options_(std::move(options)) {}

  // OK once the model is placed, its log starts with `identity`'s create
  // entry and its placement says created; ALREADY_EXISTS if its log starts
  // with another create entry (or was compacted: the model has
  // snapshots); UNAVAILABLE if the cluster did not answer in time. A log
  // that elects no leader in time is given up for the next generation
  // (logs_given_up).
  absl::Status Create(const ModelIdentity& identity);
  // Empties the model's placement (every server releases it at its next
  // reconcile): the generation of its log, which the caller removes;
  // NOT_FOUND if it has none.
  absl::StatusOr<std::uint64_t> Unplace(absl::string_view name);

  std::uint64_t logs_given_up() const { return logs_given_up_.load(); }

 private:
  // One try at creating the model at `placement` (as read): placed first
  // if it has no servers (PlaceNew), then its log made and its create
  // entry appended unless the placement says created, and marked created;
  // OK, ALREADY_EXISTS, or ABORTED when the placement changed meanwhile
  // (read it again and decide). A log that elects no leader within a wait
  // growing with *given_up is given up (GiveUpLog).
  absl::Status CreateAt(const ModelIdentity& identity,
                        PlacementStore::Placement placement, absl::Time started,
                        absl::Time deadline, int* given_up);
  // Places `name` (placed at `previous`, deleted or never placed) on the
  // live servers, with a log of the generation after previous.log, not
  // created yet; ABORTED if another change came first.
  absl::StatusOr<PlacementStore::Placement> PlaceNew(
      const std::string& name, const PlacementStore::Placement& previous,
      absl::Time deadline);
  // Moves the placement, not created yet, on to its log's next generation
  // and abandons the log given up; ABORTED once moved (or if another
  // change came first): the caller reads the placement again.
  absl::Status GiveUpLog(const std::string& name,
                         const PlacementStore::Placement& placement,
                         absl::Duration waited, absl::Time deadline,
                         int* given_up);

  JetStreamClient& client_;
  PlacementStore& placements_;
  Membership& membership_;
  StreamJanitor& janitor_;
  const Options options_;
  std::atomic<std::uint64_t> logs_given_up_{0};
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_CLUSTER_MODEL_CREATION_H_
