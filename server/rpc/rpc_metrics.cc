#include "server/rpc/rpc_metrics.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "google/protobuf/descriptor.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "streamreg/v1/model_service.grpc.pb.h"
#include "streamreg/v1/regression_service.grpc.pb.h"

namespace streamreg {
namespace {

using RpcType = grpc::experimental::ServerRpcInfo::Type;

absl::string_view TypeLabel(RpcType type) {
  switch (type) {
    case RpcType::UNARY:
      return "unary";
    case RpcType::CLIENT_STREAMING:
      return "client_stream";
    case RpcType::SERVER_STREAMING:
      return "server_stream";
    case RpcType::BIDI_STREAMING:
      return "bidi_stream";
  }
  return "unknown";
}

RpcType TypeOf(const google::protobuf::MethodDescriptor& method) {
  if (method.client_streaming()) {
    return method.server_streaming() ? RpcType::BIDI_STREAMING
                                     : RpcType::CLIENT_STREAMING;
  }
  return method.server_streaming() ? RpcType::SERVER_STREAMING : RpcType::UNARY;
}

// The status codes by number, as grpc_code labels.
constexpr std::array<absl::string_view, 17> kCodeNames = {"OK",
                                                          "CANCELLED",
                                                          "UNKNOWN",
                                                          "INVALID_ARGUMENT",
                                                          "DEADLINE_EXCEEDED",
                                                          "NOT_FOUND",
                                                          "ALREADY_EXISTS",
                                                          "PERMISSION_DENIED",
                                                          "RESOURCE_EXHAUSTED",
                                                          "FAILED_PRECONDITION",
                                                          "ABORTED",
                                                          "OUT_OF_RANGE",
                                                          "UNIMPLEMENTED",
                                                          "INTERNAL",
                                                          "UNAVAILABLE",
                                                          "DATA_LOSS",
                                                          "UNAUTHENTICATED"};

// Counts one call into its method's entry: started when the call arrives,
// each message received and sent, and the status with the time since
// arrival when the status is sent. On a bidirectional stream (Learn,
// PredictStream: one answer per message, in order) also each message's
// time from its arrival to its answer, as the stream runs.
class RpcMetricsInterceptor : public grpc::experimental::Interceptor {
 public:
  explicit RpcMetricsInterceptor(RpcMetrics::Method* method)
      : method_(method),
        start_(std::chrono::steady_clock::now()),
        per_message_(method->PerMessage()) {
    method_->started.fetch_add(1, std::memory_order_relaxed);
  }

  void Intercept(grpc::experimental::InterceptorBatchMethods* batch) override {
    using Hook = grpc::experimental::InterceptionHookPoints;
    if (batch->QueryInterceptionHookPoint(Hook::POST_RECV_MESSAGE) &&
        batch->GetRecvMessage() != nullptr) {
      method_->received.fetch_add(1, std::memory_order_relaxed);
      if (per_message_) Arrived();
    }
    if (batch->QueryInterceptionHookPoint(Hook::PRE_SEND_MESSAGE)) {
      method_->sent.fetch_add(1, std::memory_order_relaxed);
      if (per_message_) Answered();
    }
    if (batch->QueryInterceptionHookPoint(Hook::PRE_SEND_STATUS)) {
      const std::size_t code = std::min<std::size_t>(
          batch->GetSendStatus().error_code(), kCodeNames.size() - 1);
      method_->handled[code].fetch_add(1, std::memory_order_relaxed);
      method_->handling.Observe(std::chrono::steady_clock::now() - start_);
    }
    batch->Proceed();
  }

 private:
  // Reading and writing run on different threads.
  void Arrived() {
    const auto now = std::chrono::steady_clock::now();
    absl::MutexLock lock(&mutex_);
    unanswered_.push_back(now);
  }

  void Answered() {
    const auto now = std::chrono::steady_clock::now();
    std::chrono::steady_clock::time_point arrival;
    {
      absl::MutexLock lock(&mutex_);
      if (unanswered_.empty()) return;
      arrival = unanswered_.front();
      unanswered_.pop_front();
    }
    method_->message_handling.Observe(now - arrival);
  }

  RpcMetrics::Method* const method_;
  const std::chrono::steady_clock::time_point start_;
  const bool per_message_;
  absl::Mutex mutex_;
  // When each message not answered yet arrived, oldest first.
  std::deque<std::chrono::steady_clock::time_point> unanswered_
      ABSL_GUARDED_BY(mutex_);
};

class RpcMetricsInterceptorFactory
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit RpcMetricsInterceptorFactory(RpcMetrics* metrics)
      : metrics_(metrics) {}

  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    return new RpcMetricsInterceptor(
        metrics_->Find(info->method(), info->type()));
  }

 private:
  RpcMetrics* const metrics_;
};

}  // namespace

RpcMetrics::RpcMetrics() {
  const google::protobuf::DescriptorPool* pool =
      google::protobuf::DescriptorPool::generated_pool();
  for (const char* service_name :
       {v1::ModelService::service_full_name(),
        v1::RegressionService::service_full_name(),
        grpc::health::v1::Health::service_full_name(),
        "grpc.reflection.v1alpha.ServerReflection",
        "grpc.reflection.v1.ServerReflection"}) {
    const google::protobuf::ServiceDescriptor* service =
        pool->FindServiceByName(service_name);
    if (service == nullptr) continue;  // a reflection version not built in
    for (int i = 0; i < service->method_count(); ++i) {
      const google::protobuf::MethodDescriptor& method = *service->method(i);
      Add(service->full_name(), method.name(), TypeOf(method));
    }
  }
  for (RpcType type : {RpcType::UNARY, RpcType::CLIENT_STREAMING,
                       RpcType::SERVER_STREAMING, RpcType::BIDI_STREAMING}) {
    auto method = std::make_unique<Method>();
    method->service = "unknown";
    method->name = "unknown";
    method->type = std::string(TypeLabel(type));
    unknown_[static_cast<std::size_t>(type)] = std::move(method);
  }
}

void RpcMetrics::Add(const std::string& service, const std::string& name,
                     RpcType type) {
  auto method = std::make_unique<Method>();
  method->service = service;
  method->name = name;
  method->type = std::string(TypeLabel(type));
  methods_[absl::StrCat("/", service, "/", name)] = std::move(method);
}

RpcMetrics::Method* RpcMetrics::Find(const char* full_name, RpcType type) {
  if (full_name != nullptr) {
    if (auto it = methods_.find(absl::string_view(full_name));
        it != methods_.end()) {
      return it->second.get();
    }
  }
  return unknown_[static_cast<std::size_t>(type)].get();
}

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
RpcMetrics::InterceptorFactory() {
  return std::make_unique<RpcMetricsInterceptorFactory>(this);
}

std::vector<const RpcMetrics::Method*> RpcMetrics::Methods() const {
  std::vector<const Method*> methods;
  for (const auto& [full_name, method] : methods_) {
    methods.push_back(method.get());
  }
  std::sort(
      methods.begin(), methods.end(), [](const Method* a, const Method* b) {
        return std::tie(a->service, a->name) < std::tie(b->service, b->name);
      });
  for (const std::unique_ptr<Method>& method : unknown_) {
    methods.push_back(method.get());
  }
  return methods;
}

void RpcMetrics::Write(PrometheusText& out) const {
  using Type = PrometheusText::Type;
  const std::vector<const Method*> methods = Methods();
  const auto labels = [](const Method& m) {
    return std::array<PrometheusText::Label, 3>{{{"grpc_service", m.service},
                                                 {"grpc_method", m.name},
                                                 {"grpc_type", m.type}}};
  };
  const auto counter = [&](const char* name, const char* help,
                           const std::atomic<std::uint64_t> Method::*count) {
    out.Family(name, Type::kCounter, help);
    for (const Method* m : methods) {
      out.Sample(name, labels(*m), (m->*count).load(std::memory_order_relaxed));
    }
  };
  counter("grpc_server_started_total", "RPCs started on the server.",
          &Method::started);
  out.Family("grpc_server_handled_total", Type::kCounter,
             "RPCs completed on the server, by status code.");
  for (const Method* m : methods) {
    for (std::size_t code = 0; code < kCodeNames.size(); ++code) {
      const std::uint64_t count =
          m->handled[code].load(std::memory_order_relaxed);
      if (count == 0 && code != 0) continue;  // OK always; others once seen
      out.Sample("grpc_server_handled_total",
                 {{"grpc_service", m->service},
                  {"grpc_method", m->name},
                  {"grpc_type", m->type},
                  {"grpc_code", kCodeNames[code]}},
                 count);
    }
  }
  counter("grpc_server_msg_received_total",
          "Messages received from clients (requests; each one of a stream).",
          &Method::received);
  counter("grpc_server_msg_sent_total",
          "Messages sent to clients (responses; each one of a stream).",
          &Method::sent);
  out.Family("grpc_server_handling_seconds", Type::kHistogram,
             "Seconds from the arrival of an RPC to its status: a unary "
             "call's latency, a stream's lifetime.");
  for (const Method* m : methods) {
    out.Histogram("grpc_server_handling_seconds", labels(*m),
                  m->handling.Read());
  }
  out.Family("streamreg_stream_message_handling_seconds", Type::kHistogram,
             "Seconds from the arrival of a message of a bidirectional "
             "stream (Learn, PredictStream) to its answer, observed as the "
             "stream runs.");
  for (const Method* m : methods) {
    if (!m->PerMessage()) continue;
    out.Histogram("streamreg_stream_message_handling_seconds", labels(*m),
                  m->message_handling.Read());
  }
}

}  // namespace streamreg
