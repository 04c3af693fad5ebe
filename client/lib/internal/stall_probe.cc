#include "client/lib/internal/stall_probe.h"

#include <utility>

namespace streamreg {

StallProbe::StallProbe(
    v1::RegressionService::Stub* server, grpc::ClientContext* call,
    absl::Duration interval,
    std::function<std::unique_ptr<grpc::ClientContext>()> new_context)
    : server_(server),
      call_(call),
      interval_(interval),
      new_context_(std::move(new_context)),
      thread_([this](std::stop_token stop) { Run(stop); }) {}

void StallProbe::Run(std::stop_token stop) {
  const auto interval = absl::ToChronoNanoseconds(interval_);
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait_for(lock, stop, interval, [] { return false; });
    }
    if (stop.stop_requested()) return;
    std::unique_ptr<grpc::ClientContext> context = new_context_();
    context->set_deadline(std::chrono::system_clock::now() + interval);
    v1::PingRequest request;
    v1::PingResponse response;
    const grpc::Status pinged =
        server_->Ping(context.get(), request, &response);
    if (stop.stop_requested()) return;
    if (pinged.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ||
        pinged.error_code() == grpc::StatusCode::UNAVAILABLE) {
      fired_ = true;
      call_->TryCancel();
      return;
    }
  }
}

}  // namespace streamreg
