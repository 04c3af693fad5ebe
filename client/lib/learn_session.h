#ifndef STREAMREG_CLIENT_LIB_LEARN_SESSION_H_
#define STREAMREG_CLIENT_LIB_LEARN_SESSION_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/lib/client.h"
#include "grpcpp/grpcpp.h"

namespace streamreg {

class AttemptBound;
struct ServerStubs;

struct LearnSessionOptions {
  // Every answer waits until its sample is durable (the server's cautious
  // mode, LearnRequest.answer_when_durable); by default the server answers
  // at once and reports durability after.
  bool answer_when_durable = false;
  // Told of each sample once the server reports it durable: its number in
  // the session (1 for the first) and how long after it was first sent.
  std::function<void(std::uint64_t sample, absl::Duration durability_lag)>
      on_durable;
};

// A sample of a tick, for LearnSession::LearnAhead: its inputs and targets
// (viewed, not copied, until the call returns) and its id (0: one is
// given).
struct TickSample {
  std::span<const double> x;
  std::span<const double> y;
  std::uint64_t sample_id = 0;
};

// A point whose prediction a loop wants ahead of its tick, for
// LearnSession::LearnAhead: its inputs (viewed until the call returns) and
// the id the sample of its tick will carry (0: none), by which the server
// scores the prediction when that sample comes (ModelStats.ahead_*).
struct AheadPoint {
  std::span<const double> x;
  std::uint64_t sample_id = 0;
};

// The robot's loop over one Learn stream: each call sends one sample (or a
// few ticks' samples, with the points to predict ahead of their ticks) and
// returns the predictions the model made before learning them, answered
// before the samples are durable. The session keeps every sample until the
// server's durability watermark (LearnResponse.durable_messages) covers
// it. If the stream breaks with a retryable status, a new one is opened on
// the server the client routes the model to and the samples not yet
// covered are sent again first (same ids, so none is learned twice; their
// answers are not returned), then the current one. While the model has
// other servers to go to, a sample whose answer does not come within the
// client's replica_attempt_timeout ends the stream (a stalled server) and
// is sent to the next. Close() waits until every sample is durable. Used
// by one thread.
class LearnSession {
 public:
  LearnSession(Client* client, std::string model,
               LearnSessionOptions options = {});
  ~LearnSession();
  LearnSession(const LearnSession&) = delete;
  LearnSession& operator=(const LearnSession&) = delete;

  // A failed call gives up the sample it sent (the caller may send it
  // again); the samples before it are kept and resent with the next call.
  absl::StatusOr<v1::LearnResponse> Learn(std::span<const double> x,
                                          std::span<const double> y,
                                          std::uint64_t sample_id = 0);
  // One message of a loop that predicts ahead: the samples of the ticks
  // since the last call (LearnRequest.samples; their answers in
  // LearnResponse.predictions) and the points whose predictions it wants
  // before their ticks come (LearnRequest.ahead; answered in
  // LearnResponse.ahead). Either may be empty, not both. Without
  // `answer_samples` the samples are not answered (LearnRequest.
  // skip_answers; not in the cautious mode). Resent and confirmed as
  // Learn's sample is.
  absl::StatusOr<v1::LearnResponse> LearnAhead(
      std::span<const TickSample> samples, std::span<const AheadPoint> ahead,
      bool answer_samples = true);
  // Half-closes the stream and waits for the server's closing watermark
  // (resending on a new stream if it breaks): OK once every sample of the
  // session is durable.
  absl::Status Close();
  // From any thread: ends the exchange under way, whose call returns
  // CANCELLED, and fails every later one the same way (for a thread that
  // must stop a session blocked on a server that does not answer).
  void Cancel();

  // Samples of the session the server has reported durable; sent and not
  // yet reported.
  std::uint64_t durable_samples() const { return durable_samples_; }
  std::size_t unconfirmed_samples() const;
  // How long the oldest unconfirmed sample has waited since it was first
  // sent (zero when none waits).
  absl::Duration durability_lag(absl::Time now = absl::Now()) const;

 private:
  // A message sent and not yet covered by the watermark.
  struct Unconfirmed {
    v1::LearnRequest request;
    std::uint64_t serial = 0;   // the session's message count when sent
    std::uint64_t number = 0;   // of its first sample, in the session
    std::uint64_t samples = 0;  // it holds
    std::uint64_t message = 0;  // on the current stream
    absl::Time first_sent;
  };

  // Sends `request` (its model and mode set here), holding `samples`
  // samples, until answered or failed for good.
  absl::StatusOr<v1::LearnResponse> Send(v1::LearnRequest request,
                                         std::uint64_t samples);

  // One try of sending the last unconfirmed message (opening a stream and
  // resending the others first if none is open).
  absl::Status TryLearn(v1::LearnResponse* response);
  absl::Status TryClose();
  // Opens a stream and sends every unconfirmed message but the last `keep`
  // again, their answers read and dropped.
  absl::Status Reopen(std::size_t keep);
  // Sends `entry` as the stream's next message and reads its answer.
  absl::Status Exchange(Unconfirmed& entry, v1::LearnResponse* response);
  // Forgets the samples a watermark covers.
  void Confirm(std::uint64_t durable_messages);
  // Ends a broken stream: its status (UNAVAILABLE when it ended OK).
  absl::Status Broken();
  // Drops the stream ended with `status` (told to the client's router when
  // an error) so that the next try opens a new one; returns `status`.
  absl::Status Abandon(absl::Status status);

  Client* const client_;
  const std::string model_;
  const LearnSessionOptions options_;
  std::deque<Unconfirmed> unconfirmed_;
  std::uint64_t samples_ = 0;
  std::uint64_t serials_ = 0;
  std::uint64_t durable_samples_ = 0;

  std::shared_ptr<ServerStubs> server_;  // the stream is open on
  // Replaced only by the session's thread, under cancel_mutex_ (which
  // Cancel() reads it under).
  std::unique_ptr<grpc::ClientContext> context_;
  absl::Mutex cancel_mutex_;
  bool cancelled_ ABSL_GUARDED_BY(cancel_mutex_) = false;
  std::unique_ptr<grpc::ClientReaderWriter<v1::LearnRequest, v1::LearnResponse>>
      stream_;
  std::uint64_t messages_ = 0;           // sent on the current stream
  std::unique_ptr<AttemptBound> bound_;  // of each exchange
};

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_LIB_LEARN_SESSION_H_
