#ifndef STREAMREG_SERVER_STORAGE_SYNC_POLICY_H_
#define STREAMREG_SERVER_STORAGE_SYNC_POLICY_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace streamreg {

// When the write-ahead log reaches stable storage relative to the
// acknowledgement of a write (--sync):
//  - always: every write is fsynced before it is acknowledged. Nothing
//    acknowledged is lost, by a crash of the process or by a power cut.
//  - interval:MS: a write is acknowledged once the operating system has it
//    (it survives a crash of the process); the logs of all models are
//    fsynced together at most MS milliseconds apart, so a power cut loses
//    at most the last MS of acknowledged writes.
struct SyncPolicy {
  enum class Mode { kAlways, kInterval };
  Mode mode = Mode::kAlways;
  absl::Duration interval = absl::ZeroDuration();

  // "always" or "interval:MS" (MS from 1 to 60000); the error quotes the
  // flag.
  static absl::StatusOr<SyncPolicy> Parse(absl::string_view text);
  std::string ToString() const;
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_STORAGE_SYNC_POLICY_H_
