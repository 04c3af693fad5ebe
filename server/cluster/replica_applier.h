#ifndef STREAMREG_SERVER_CLUSTER_REPLICA_APPLIER_H_
#define STREAMREG_SERVER_CLUSTER_REPLICA_APPLIER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/hosting/learn_outcome.h"
#include "server/hosting/model_writer.h"

namespace streamreg {

// What one entry of a model's replicated log does to the model here, the
// same on every replica (docs/cluster.md, "Deterministic replicas"). A
// samples entry is checked as it is read (other servers wrote it) and
// handed to the model's writer, whose recent-id window drops retried
// samples; a refit and a take-over go to the writer in order with the
// samples; the create entry must name the model's own configuration. Every
// entry is noted applied, whatever came of it: what one replica refuses
// (a batch past the sample limit, an entry it cannot decode) every replica
// refuses, and that refusal is the entry's outcome. The caller (LogFollower)
// keeps the log's order and applies one entry at a time.
class ReplicaApplier {
 public:
  // `writer` holds its model (HostedModel::log_writer()); `max_unlearned`
  // is how many samples may wait for learning before an entry's apply waits
  // for it (ModelWriter::ApplyOptions).
  ReplicaApplier(std::shared_ptr<ModelWriter> writer, std::size_t max_unlearned)
      : writer_(std::move(writer)), max_unlearned_(max_unlearned) {}

  const std::string& model_name() const { return writer_->name(); }

  // Applies the entry at `sequence` of the log, whose bytes are `payload`:
  // a samples entry's LearnOutcome, an empty outcome for the others, or
  // the error it was refused with (DATA_LOSS for an entry that is not one,
  // or a create entry of another model).
  absl::StatusOr<LearnOutcome> Apply(std::uint64_t sequence,
                                     absl::string_view payload);

 private:
  absl::StatusOr<LearnOutcome> ApplyUnnoted(std::uint64_t sequence,
                                            absl::string_view payload);

  const std::shared_ptr<ModelWriter> writer_;
  const std::size_t max_unlearned_;
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_CLUSTER_REPLICA_APPLIER_H_
