#ifndef STREAMREG_SERVER_HOSTING_WRITE_LOG_H_
#define STREAMREG_SERVER_HOSTING_WRITE_LOG_H_

#include <span>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/model/model.h"
#include "server/hosting/learn_outcome.h"

namespace streamreg {

// Where a hosted model's writes go when they are not its own to apply: in
// cluster mode, the model's replicated log, which every server serving the
// model applies in the same order (docs/cluster.md). A write returns once
// it is in the log and this server's replica has applied it, with what
// applying it did — waiting for the apply at most until `deadline` (the
// client's; InfiniteFuture when it set none, as a single server's write
// waits for its turn without a bound).
class WriteLog {
 public:
  virtual ~WriteLog() = default;
  // The batch (validated) appended; what learning it did on this replica
  // (the model may still refuse it, as every replica does).
  virtual absl::StatusOr<LearnOutcome> AppendSamples(
      std::span<const Sample> batch, absl::Time deadline) = 0;
  // A batch refit appended; its outcome on this replica.
  virtual absl::Status AppendRefit(absl::Time deadline) = 0;
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_HOSTING_WRITE_LOG_H_
