#ifndef STREAMREG_SERVER_HOSTING_SNAPSHOT_SCHEDULE_H_
#define STREAMREG_SERVER_HOSTING_SNAPSHOT_SCHEDULE_H_

#include <cstdint>

#include "absl/time/time.h"
#include "server/hosting/hosted_model.h"

namespace streamreg {

// When a hosted model's scheduled snapshot is taken, for the local journal
// (ModelStorage) and for cluster models (ClusterNode) alike: every
// `every_samples` samples learned, or once `interval` has passed with
// writes not in a snapshot yet.
//
// A due snapshot waits while the model's background work is unfinished
// (Model::BackgroundWorkSettled): taken then, it would make every restore
// compute the metric refresh or build the index again — minutes at 10^6
// samples, with the log's next entries waiting behind them. It waits at
// most until twice the samples or twice the interval have passed.
struct SnapshotSchedule {
  std::uint64_t every_samples = 0;
  absl::Duration interval = absl::InfiniteDuration();

  // Whether to snapshot `model` now; `unsaved_writes` says whether any
  // write (a sample, a refit) came after its last snapshot.
  bool Due(const HostedModel& model, bool unsaved_writes, absl::Time now) const;
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_HOSTING_SNAPSHOT_SCHEDULE_H_
