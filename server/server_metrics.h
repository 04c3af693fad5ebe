#ifndef STREAMREG_SERVER_SERVER_METRICS_H_
#define STREAMREG_SERVER_SERVER_METRICS_H_

#include <string>

#include "metrics/latency_histogram.h"
#include "server/model_registry.h"
#include "server/rpc_metrics.h"

namespace streamreg {

// Everything /metrics shows for one server: the RPC counts (kept by
// RpcMetrics' interceptor), the fsync times of the write-ahead logs (kept
// by the journals), and what is read at scrape time from the registry's
// models and /proc. Render() is the scrape.
class ServerMetrics {
 public:
  RpcMetrics& rpc() { return rpc_; }
  LatencyHistogram& wal_fsync() { return wal_fsync_; }

  // The text exposition of every family.
  std::string Render(const ModelRegistry& registry) const;

 private:
  RpcMetrics rpc_;
  LatencyHistogram wal_fsync_;
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_SERVER_METRICS_H_
