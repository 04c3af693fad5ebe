#ifndef STREAMREG_SERVER_CLUSTER_RENDEZVOUS_H_
#define STREAMREG_SERVER_CLUSTER_RENDEZVOUS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace streamreg {

// Rendezvous (highest-random-weight) hashing: which servers a model's
// replicas are proposed on (docs/cluster.md, "Placement"). Every server is
// scored for the model by a hash of (model, server); the `replicas`
// highest-scored serve it. A server joining takes over exactly the models
// for which it now scores among the highest, about replicas / (n + 1) of
// them, each moving one replica; one leaving hands each of its models to
// the next-highest server; nothing else moves. The hash is SHA-256, so the
// choice is the same on every server, build and platform.
std::uint64_t RendezvousScore(absl::string_view model,
                              absl::string_view server);

// The `replicas` servers (all, if fewer) of `servers` with the highest
// scores for `model`, highest first; ties (never seen in 64 bits) broken
// by name.
std::vector<std::string> RendezvousOwners(
    absl::string_view model, const std::vector<std::string>& servers,
    std::size_t replicas);

}  // namespace streamreg

#endif  // STREAMREG_SERVER_CLUSTER_RENDEZVOUS_H_
