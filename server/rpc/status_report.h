#ifndef STREAMREG_SERVER_RPC_STATUS_REPORT_H_
#define STREAMREG_SERVER_RPC_STATUS_REPORT_H_

#include <cstddef>
#include <optional>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/time/time.h"
#include "server/cluster/cluster_node.h"
#include "server/hosting/model_registry.h"
#include "server/rpc/rpc_metrics.h"

namespace streamreg {

// The models the status page details without being asked: all of them
// while there are at most this many (status.js's AUTO_SHOWN_MODELS).
inline constexpr std::size_t kStatusPageModelsDetailedUnasked = 6;

// What the status page (GET /api/status on the metrics port) shows, as one
// JSON document: the server (version, uptime, failed models), each gRPC
// method's handling-time histogram (the page takes recent percentiles from
// two readings), and per model its inputs and targets, samples, capacity,
// how long ago its newest sample arrived, learn lag, snapshot age and
// current errors; for the models in `detailed`
// (nullopt: every model) also its learning curves (LearningCurve's points,
// then the model now) and learned metric (weights; the spectrum and
// leading directions of a matrix metric). Read like a scrape: from the
// models' stats, without waiting for learning. NaN (an error not known
// yet) is written as null. In cluster mode (`cluster` given) also the
// cluster as this server sees it: the live servers, each replica hosted
// here (its log's last entry applied, whether it is catching up or fell
// behind) and the cluster's failure counters. docs/api.md, "The status
// page", lists the fields.
std::string StatusReportJson(
    const ModelRegistry& registry, const RpcMetrics& rpc,
    const std::optional<absl::flat_hash_set<std::string>>& detailed,
    const ClusterNode::Report* cluster, absl::Time started, absl::Time now);

}  // namespace streamreg

#endif  // STREAMREG_SERVER_RPC_STATUS_REPORT_H_
