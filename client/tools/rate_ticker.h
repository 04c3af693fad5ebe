#ifndef STREAMREG_CLIENT_TOOLS_RATE_TICKER_H_
#define STREAMREG_CLIENT_TOOLS_RATE_TICKER_H_

#include <cstdint>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace streamreg {

// The clock of a control loop at a fixed rate: tick k is due at start +
// k/rate (an absolute schedule, so a slow exchange does not shift later
// ticks). Wait() sleeps until the next tick is due, or returns at once when
// the loop is behind, and counts the ticks that started more than one
// period late.
class RateTicker {
 public:
  explicit RateTicker(double rate_hz, absl::Time start = absl::Now())
      : period_(absl::Seconds(1.0 / rate_hz)), start_(start) {}

  void Wait() {
    const absl::Time due = start_ + period_ * static_cast<double>(tick_);
    const absl::Time now = absl::Now();
    if (now < due) {
      lag_ = absl::ZeroDuration();
      absl::SleepFor(due - now);
    } else {
      lag_ = now - due;
      if (lag_ > max_lag_) max_lag_ = lag_;
      if (lag_ > period_) ++late_ticks_;
    }
    ++tick_;
  }

  std::uint64_t ticks() const { return tick_; }
  std::uint64_t late_ticks() const { return late_ticks_; }
  // How far behind its schedule the last tick started, and the worst.
  absl::Duration lag() const { return lag_; }
  absl::Duration max_lag() const { return max_lag_; }
  absl::Time start() const { return start_; }
  absl::Duration period() const { return period_; }

 private:
  absl::Duration period_;
  absl::Time start_;
  std::uint64_t tick_ = 0;
  std::uint64_t late_ticks_ = 0;
  absl::Duration lag_ = absl::ZeroDuration();
  absl::Duration max_lag_ = absl::ZeroDuration();
};

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_TOOLS_RATE_TICKER_H_
