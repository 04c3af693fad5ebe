#ifndef STREAMREG_CLIENT_LIB_INTERNAL_EXCHANGE_WATCHDOG_H_
#define STREAMREG_CLIENT_LIB_INTERNAL_EXCHANGE_WATCHDOG_H_

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "grpcpp/grpcpp.h"

namespace streamreg {

// Bounds one message's exchange on a synchronous gRPC stream, which has no
// per-message deadline: armed before the write, disarmed after the answer
// is read, it cancels the call (ClientContext::TryCancel, unblocking the
// waiting Write or Read) if the answer has not come by the deadline — so a
// session can move to another server when its server stalls (a paused
// process) instead of waiting for it. Arming and disarming take a lock and
// wake the watchdog's thread only when it was idle; it otherwise sleeps
// until the deadline it last saw and then looks again. Used by one thread
// (besides its own).
class ExchangeWatchdog {
 public:
  using Clock = std::chrono::steady_clock;

  ExchangeWatchdog();
  ~ExchangeWatchdog();
  ExchangeWatchdog(const ExchangeWatchdog&) = delete;
  ExchangeWatchdog& operator=(const ExchangeWatchdog&) = delete;

  // Cancels `context` unless Disarm is called before `deadline`.
  void Arm(grpc::ClientContext* context, Clock::time_point deadline);
  // Ends the exchange; whether the watchdog cancelled it.
  bool Disarm();

 private:
  void Run(std::stop_token stop);

  std::mutex mutex_;
  std::condition_variable_any armed_signal_;
  grpc::ClientContext* context_ = nullptr;  // armed while set
  Clock::time_point deadline_;
  bool idle_ = true;  // the thread waits for an Arm
  bool fired_ = false;
  std::jthread thread_;  // last: stopped first
};

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_LIB_INTERNAL_EXCHANGE_WATCHDOG_H_
