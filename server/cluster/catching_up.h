#ifndef STREAMREG_SERVER_CLUSTER_CATCHING_UP_H_
#define STREAMREG_SERVER_CLUSTER_CATCHING_UP_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace streamreg {

// Where a call on a model goes while this server's replica of it, just
// hosted, replays its log's tail (LogFollower::catching_up): to the
// model's other servers when it has some (UNAVAILABLE naming them:
// common/served_by.h), else a write is taken here (it waits for this
// replica's apply) and a read is asked to retry. A read asks only when
// the replica has learned no sample: "no samples" would be false while the
// log holds samples not applied yet, and final for a client
// (FAILED_PRECONDITION is not retried). OK when it is not catching up.
enum class CallKind { kRead, kWrite };
absl::Status WhileCatchingUp(absl::string_view model, bool catching_up,
                             std::uint64_t applied,
                             const std::vector<std::string>& others,
                             CallKind kind);

}  // namespace streamreg

#endif  // STREAMREG_SERVER_CLUSTER_CATCHING_UP_H_
