#ifndef STREAMREG_SERVER_RPC_CLUSTER_METRICS_H_
#define STREAMREG_SERVER_RPC_CLUSTER_METRICS_H_

#include "server/cluster/cluster_node.h"
#include "server/telemetry/prometheus_text.h"

namespace streamreg {

// The streamreg_cluster_* families of a server in cluster mode
// (docs/cluster-operations.md, "What the operator sees"): the live servers it
// sees, the models it hosts and how far each replica has applied its log
// (replicas of a model compare across servers), which replicas are
// catching up or fell behind, and the failures of its heartbeats,
// reconcile rounds, hosting and snapshots.
void WriteClusterMetrics(const ClusterNode::Report& report,
                         PrometheusText& out);

}  // namespace streamreg

#endif  // STREAMREG_SERVER_RPC_CLUSTER_METRICS_H_
