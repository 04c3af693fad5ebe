#ifndef STREAMREG_COMMON_SERVED_BY_H_
#define STREAMREG_COMMON_SERVED_BY_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace streamreg {

// How a server of a cluster that does not serve a model sends the client
// to those that do (docs/api.md, "Cluster mode"): it answers UNAVAILABLE,
// and its message ends "(servers=HOST:PORT,HOST:PORT)". Clients retry on
// one of those servers and remember them for the model.
absl::Status ServedByError(absl::string_view model,
                           const std::vector<std::string>& servers);
// The same for a server that does serve the model but sends a call
// elsewhere for now: `reason` (the message's start) says why.
absl::Status SendElsewhereError(absl::string_view reason,
                                const std::vector<std::string>& servers);
// The servers a status names that way (none: it names none).
std::vector<std::string> ServedBy(const absl::Status& status);

}  // namespace streamreg

#endif  // STREAMREG_COMMON_SERVED_BY_H_
