#include "server/hosting/snapshot_schedule.h"

#include <algorithm>

namespace streamreg {

bool SnapshotSchedule::Due(const HostedModel& model, bool unsaved_writes,
                           absl::Time now) const {
  const std::uint64_t every = std::max<std::uint64_t>(every_samples, 1);
  const std::uint64_t since = model.samples_since_snapshot();
  const absl::Duration age = now - model.last_snapshot_time();
  const bool by_samples = since >= every;
  const bool by_time = unsaved_writes && age >= interval;
  if (!by_samples && !by_time) return false;
  const bool waited_enough =
      since >= 2 * every || (unsaved_writes && age >= 2 * interval);
  return waited_enough || model.model().BackgroundWorkSettled();
}

}  // namespace streamreg
