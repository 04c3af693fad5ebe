#ifndef STREAMREG_SERVER_RPC_SERVER_METRICS_H_
#define STREAMREG_SERVER_RPC_SERVER_METRICS_H_

#include <string>

#include "server/cluster/cluster_node.h"
#include "server/hosting/model_registry.h"
#include "server/rpc/rpc_metrics.h"
#include "server/telemetry/latency_histogram.h"

namespace streamreg {

// Everything /metrics shows for one server: the RPC counts (kept by
// RpcMetrics' interceptor), the fsync times of the write-ahead logs (kept
// by the journals), and what is read at scrape time from the registry's
// models and /proc. Render() is the scrape.
class ServerMetrics {
 public:
  RpcMetrics& rpc() { return rpc_; }
  const RpcMetrics& rpc() const { return rpc_; }
  LatencyHistogram& wal_fsync() { return wal_fsync_; }

  // The text exposition of every family (the cluster's too in cluster
  // mode: `cluster` not null).
  std::string Render(const ModelRegistry& registry,
                     const ClusterNode* cluster = nullptr) const;

 private:
  RpcMetrics rpc_;
  LatencyHistogram wal_fsync_;
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_RPC_SERVER_METRICS_H_
