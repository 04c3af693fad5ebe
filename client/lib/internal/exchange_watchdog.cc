#include "client/lib/internal/exchange_watchdog.h"

namespace streamreg {

ExchangeWatchdog::ExchangeWatchdog()
    : thread_([this](std::stop_token stop) { Run(stop); }) {}

ExchangeWatchdog::~ExchangeWatchdog() {
  thread_.request_stop();
  armed_signal_.notify_all();
}

void ExchangeWatchdog::Arm(grpc::ClientContext* context,
                           Clock::time_point deadline) {
  std::lock_guard lock(mutex_);
  context_ = context;
  deadline_ = deadline;
  fired_ = false;
  if (idle_) armed_signal_.notify_one();
}

bool ExchangeWatchdog::Disarm() {
  std::lock_guard lock(mutex_);
  context_ = nullptr;
  return fired_;
}

void ExchangeWatchdog::Run(std::stop_token stop) {
  std::unique_lock lock(mutex_);
  while (!stop.stop_requested()) {
    if (context_ == nullptr) {
      idle_ = true;
      armed_signal_.wait(lock, stop, [this] { return context_ != nullptr; });
      idle_ = false;
      continue;
    }
    // Sleeps until the deadline seen now; an exchange disarmed meanwhile
    // (and another armed with a later deadline) is looked at again then.
    const Clock::time_point deadline = deadline_;
    if (Clock::now() < deadline) {
      armed_signal_.wait_until(lock, stop, deadline, [] { return false; });
      continue;
    }
    context_->TryCancel();
    context_ = nullptr;
    fired_ = true;
  }
}

}  // namespace streamreg
