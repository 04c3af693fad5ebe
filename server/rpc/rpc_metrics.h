#ifndef STREAMREG_SERVER_RPC_RPC_METRICS_H_
#define STREAMREG_SERVER_RPC_RPC_METRICS_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "grpcpp/support/server_interceptor.h"
#include "server/telemetry/latency_histogram.h"
#include "server/telemetry/prometheus_text.h"

namespace streamreg {

// Per gRPC method, what the server handled, in the families (and labels) of
// go-grpc-prometheus that gRPC dashboards expect: grpc_server_started_total,
// grpc_server_handled_total by status code, grpc_server_msg_received_total,
// grpc_server_msg_sent_total and the grpc_server_handling_seconds histogram
// (a unary call's latency; a stream's lifetime), and ours,
// streamreg_stream_message_handling_seconds (a bidirectional stream's
// per-message latency, while it runs). Counted by a server
// interceptor, so every call — health and reflection too — is seen in one
// place. The methods are fixed at construction (ours, health, reflection):
// a call to any other name counts under grpc_service="unknown", so clients
// cannot grow the series.
class RpcMetrics {
 public:
  RpcMetrics();
  RpcMetrics(const RpcMetrics&) = delete;
  RpcMetrics& operator=(const RpcMetrics&) = delete;

  // For grpc::ServerBuilder::experimental().SetInterceptorCreators; it
  // must not outlive this object.
  std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
  InterceptorFactory();

  void Write(PrometheusText& out) const;

  // One method's counts (the interceptor updates them).
  struct Method {
    std::string service;
    std::string name;
    std::string type;  // unary, client_stream, server_stream, bidi_stream
    std::atomic<std::uint64_t> started{0};
    std::array<std::atomic<std::uint64_t>, 17> handled{};  // by status code
    std::atomic<std::uint64_t> received{0};
    std::atomic<std::uint64_t> sent{0};
    LatencyHistogram handling;
    // Bidirectional streams: each message's arrival to its answer.
    LatencyHistogram message_handling;
    // Whether message_handling is kept: a bidirectional stream.
    bool PerMessage() const { return type == "bidi_stream"; }
  };
  // Every method, in a stable order: by service, then name; the unknown
  // ones last.
  std::vector<const Method*> Methods() const;
  // The method called "/package.Service/Method" (or the unknown one).
  Method* Find(const char* full_name,
               grpc::experimental::ServerRpcInfo::Type type);

 private:
  void Add(const std::string& service, const std::string& name,
           grpc::experimental::ServerRpcInfo::Type type);

  absl::flat_hash_map<std::string, std::unique_ptr<Method>> methods_;
  std::array<std::unique_ptr<Method>, 4> unknown_;  // by type
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_RPC_RPC_METRICS_H_
