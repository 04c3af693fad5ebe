#ifndef STREAMREG_CLIENT_LIB_REALTIME_CHANNEL_H_
#define STREAMREG_CLIENT_LIB_REALTIME_CHANNEL_H_

#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/lib/client.h"
#include "client/lib/learn_session.h"

namespace streamreg {

class SpscRowRing;
class TickAnswerTable;

struct RealtimeChannelOptions {
  // Values of a sample's inputs (x, and each desired state) and targets.
  std::size_t inputs = 0;
  std::size_t targets = 0;
  // The most ticks ahead the loop hands desired states for.
  std::size_t horizon = 20;
  // Samples per Learn message: the courier sends once it holds this many,
  // or once the oldest has waited this many ticks. (5 the measured balance
  // on the simulated arm: the predictions' error 1.10x a tick's own
  // answers', the server's CPU 0.64x; bench/notes/results-history.md.)
  std::size_t batch_ticks = 5;
  // The courier also sends at once when a desired state it holds is due
  // within this many ticks (a round trip's margin). A message asks for the
  // states due within batch_ticks + lead_ticks ticks, and the later ones
  // wait for a later message: each is predicted as late as the sending
  // allows, from a model that has learned the most.
  std::size_t lead_ticks = 3;
  // Ticks of samples, and of desired states, held while the server is away
  // (16 s at 1 kHz); a tick handed when they are full is dropped, and
  // counted.
  std::size_t capacity = 16384;
  // How often the courier looks for what the loop handed (the loop never
  // wakes it: that would be a system call).
  absl::Duration poll = absl::Milliseconds(1);
  // The pause after a message failed for good (every retry of the
  // client's policy spent) before it is sent again.
  absl::Duration retry_pause = absl::Milliseconds(200);
};

// When Read() takes its prediction: within these bounds, else the caller's
// fallback.
struct ReadBounds {
  // At most this many ticks between the tick the prediction was asked at
  // and the tick it is read for.
  std::uint64_t max_age_ticks = std::numeric_limits<std::uint64_t>::max();
  // Per target: the interval's half width, (upper - lower) / 2, at most
  // this (empty: no bound).
  std::span<const double> max_half_width = {};
};

// What Read() gave for a tick.
struct RealtimeReading {
  enum class Source {
    kPrediction,  // the prediction made for the tick's desired state
    kNone,        // fallback: no prediction of the tick arrived in time
    kStale,       // fallback: the prediction is older than max_age_ticks
    kWide,        // fallback: its interval is wider than max_half_width
  };
  Source source = Source::kNone;
  // Of the prediction, when there was one (also when refused): the
  // samples the model had learned when it made it, and how many ticks
  // before this one it was asked for.
  std::uint64_t learned = 0;
  std::uint64_t age_ticks = 0;

  bool predicted() const { return source == Source::kPrediction; }
};

// Counts of a channel, read from any thread.
struct RealtimeChannelStats {
  std::uint64_t samples_handed = 0;   // queued by Hand()
  std::uint64_t samples_dropped = 0;  // handed while the queue was full
  // Hand() calls whose new desired states did not all fit (those left out
  // are queued when handed again).
  std::uint64_t states_full = 0;
  std::uint64_t hands_invalid = 0;    // Hand() calls refused as kInvalid
  std::uint64_t samples_sent = 0;     // answered by the server
  std::uint64_t samples_durable = 0;  // reported durable
  std::uint64_t samples_refused = 0;  // in messages refused for good
  std::uint64_t messages = 0;         // answered
  std::uint64_t failures = 0;         // messages that failed (and retried)
  std::uint64_t predictions = 0;      // predictions ahead received
  std::uint64_t reads = 0;
  std::uint64_t reads_predicted = 0;
  std::uint64_t reads_none = 0;
  std::uint64_t reads_stale = 0;
  std::uint64_t reads_wide = 0;
  absl::Status last_error;  // of the last failed message (OK: none)
};

// A control loop's link to a model, safe to call from a real-time thread:
// the loop hands over each tick's measured sample, to be learned, with the
// desired states of the ticks ahead, and reads the prediction made for its
// tick's desired state. Neither call locks, waits, allocates or makes a
// system call: the loop's data goes through lock-free single-producer
// rings (SpscRowRing) to a courier thread, which sends it in Learn
// messages of several samples with the desired states as points ahead
// (LearnRequest.samples, .ahead), and keeps the predictions that come back
// by tick in a table the loop reads without a lock (TickAnswerTable). A
// tick with no prediction in time (the server slow, paused or gone), or
// one outside the caller's bounds, reads the caller's fallback instead.
// The courier's LearnSession resends what a broken stream did not confirm
// and reconnects; a message that still fails is sent again after a pause,
// so a server that comes back gets every sample the queue held.
//
// Hand() and Read() are each called by one thread (the same one, or two);
// the other members by any thread.
class RealtimeChannel {
 public:
  enum class Handed {
    kQueued,   // everything handed is queued
    kFull,     // the queue was full: the sample or some states dropped
    kInvalid,  // a span's size does not match the options, or a value
               // of the sample is not finite: nothing queued
    kClosed,   // after Close(): nothing queued
  };

  // Starts the courier. `client` must outlive the channel.
  RealtimeChannel(Client* client, std::string model,
                  RealtimeChannelOptions options);
  // Stops the courier without waiting for the server: what was handed and
  // not yet confirmed durable is given up (Close() first to keep it).
  ~RealtimeChannel();
  RealtimeChannel(const RealtimeChannel&) = delete;
  RealtimeChannel& operator=(const RealtimeChannel&) = delete;

  // Loop side, real-time safe. Hands over tick `tick`'s measured sample
  // (`x`, `y`; both empty: none this tick), and the desired states of
  // ticks tick + 1, tick + 2, ... (`desired`: up to `horizon` rows of
  // `inputs` values, one after the other), of which those not handed
  // before are queued. Ticks go up by one from call to call.
  Handed Hand(std::uint64_t tick, std::span<const double> x,
              std::span<const double> y, std::span<const double> desired);

  // Loop side, real-time safe. Writes tick `tick`'s prediction into `y`
  // (`targets` values) and, unless empty, its interval into `lower` and
  // `upper`, when one arrived within `bounds`; otherwise copies
  // `fallback` into `y` (and ±infinity into the interval).
  RealtimeReading Read(std::uint64_t tick, std::span<double> y,
                       std::span<const double> fallback,
                       const ReadBounds& bounds = {},
                       std::span<double> lower = {},
                       std::span<double> upper = {});

  // Sends what is queued and waits until the server reports every sample
  // durable, for up to `timeout` (then DEADLINE_EXCEEDED, the rest given
  // up). Hand() queues nothing after it.
  absl::Status Close(absl::Duration timeout = absl::Seconds(30));

  RealtimeChannelStats stats() const;
  const RealtimeChannelOptions& options() const { return options_; }

 private:
  // Samples and desired states the courier took from the rings and has
  // not sent yet (or whose message failed, to send again).
  struct Pending {
    std::vector<std::uint64_t> sample_ticks;
    std::vector<double> sample_values;  // x then y, per sample
    std::vector<std::uint64_t> state_ticks;
    std::vector<double> state_values;
  };

  // Counted by the loop thread alone.
  static void Count(std::atomic<std::uint64_t>& counter) {
    counter.store(counter.load(std::memory_order_relaxed) + 1,
                  std::memory_order_relaxed);
  }

  void RunCourier();
  // Stops the courier, cancelling the exchange under way.
  void Stop();
  // Moves what the rings hold into pending_ (samples up to `capacity`) and
  // forgets desired states whose tick has come.
  void Drain();
  bool ShouldSend(bool closing) const;
  // Sends one message of pending samples and states; false when it failed
  // and should be sent again after a pause.
  bool SendPending();
  // Waits `wait`, or until Close() or the destructor wakes the courier.
  void Nap(absl::Duration wait);
  void Fail(const absl::Status& status);

  Client* const client_;
  const std::string model_;
  const RealtimeChannelOptions options_;
  const std::uint64_t id_base_;  // tick t's sample has id id_base_ + t

  // Loop to courier.
  const std::unique_ptr<SpscRowRing> samples_;  // x then y, with the tick
  const std::unique_ptr<SpscRowRing> states_;  // a desired state, with its tick
  std::atomic<std::uint64_t> loop_tick_ = 0;
  std::uint64_t states_through_ = 0;  // the loop's: states handed before
  bool any_state_ = false;            // the loop's
  // Courier to loop.
  const std::unique_ptr<TickAnswerTable> answers_;
  // The loop's scratch for a read's interval.
  std::vector<double> read_lower_, read_upper_;

  // The courier's own.
  Pending pending_;
  std::unique_ptr<LearnSession> session_;

  std::atomic<bool> closing_ = false;
  std::atomic<bool> stopping_ = false;
  mutable absl::Mutex mutex_;
  bool woken_ ABSL_GUARDED_BY(mutex_) = false;
  bool courier_done_ ABSL_GUARDED_BY(mutex_) = false;
  absl::Status close_status_ ABSL_GUARDED_BY(mutex_);
  absl::Status last_error_ ABSL_GUARDED_BY(mutex_);

  // Counters (stats()): the loop's, then the courier's.
  std::atomic<std::uint64_t> samples_handed_ = 0, samples_dropped_ = 0,
                             states_full_ = 0, hands_invalid_ = 0, reads_ = 0,
                             reads_predicted_ = 0, reads_none_ = 0,
                             reads_stale_ = 0, reads_wide_ = 0;
  std::atomic<std::uint64_t> samples_sent_ = 0, samples_durable_ = 0,
                             samples_refused_ = 0, messages_ = 0, failures_ = 0,
                             predictions_ = 0;

  std::thread courier_;  // last: started once everything above is built
};

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_LIB_REALTIME_CHANNEL_H_
