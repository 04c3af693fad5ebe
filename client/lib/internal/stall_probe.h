#ifndef STREAMREG_CLIENT_LIB_INTERNAL_STALL_PROBE_H_
#define STREAMREG_CLIENT_LIB_INTERNAL_STALL_PROBE_H_

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "streamreg/v1/regression_service.grpc.pb.h"

namespace streamreg {

// Watches a server while a call to it waits for an answer that may
// rightly take long — an Ingest stream's close waits until the server has
// logged and applied its batches, and a busy server reads batches as
// slowly as it learns them — so that no fixed timeout tells a stalled
// server from a busy one. Every `interval` it pings the server (a unary
// call its gRPC threads answer without touching the models); a ping not
// answered within `interval` (a paused process answers nothing) cancels
// the call (ClientContext::TryCancel), so that its caller can go to
// another server. Stops when destroyed, before the call's context goes.
class StallProbe {
 public:
  // `new_context()`: a context for each ping (the client's credentials).
  StallProbe(v1::RegressionService::Stub* server, grpc::ClientContext* call,
             absl::Duration interval,
             std::function<std::unique_ptr<grpc::ClientContext>()> new_context);
  StallProbe(const StallProbe&) = delete;
  StallProbe& operator=(const StallProbe&) = delete;

  // Whether it cancelled the call.
  bool fired() const { return fired_; }
  absl::Duration interval() const { return interval_; }

 private:
  void Run(std::stop_token stop);

  v1::RegressionService::Stub* const server_;
  grpc::ClientContext* const call_;
  const absl::Duration interval_;
  const std::function<std::unique_ptr<grpc::ClientContext>()> new_context_;
  std::mutex mutex_;
  std::condition_variable_any wake_;
  std::atomic<bool> fired_{false};
  std::jthread thread_;  // last: stopped (and joined) first
};

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_LIB_INTERNAL_STALL_PROBE_H_
