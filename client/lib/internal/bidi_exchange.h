#ifndef STREAMREG_CLIENT_LIB_INTERNAL_BIDI_EXCHANGE_H_
#define STREAMREG_CLIENT_LIB_INTERNAL_BIDI_EXCHANGE_H_

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "client/lib/client.h"
#include "client/lib/internal/attempt_bound.h"
#include "client/lib/internal/client_routes.h"
#include "client/lib/internal/retry_call.h"
#include "grpcpp/grpcpp.h"

namespace streamreg {

// One request, one response over a bidirectional stream about one model
// that is opened on first use, on the server the client routes the model
// to, and reopened after it breaks (LearnSession, PredictSession): each
// exchange is retried by the client's policy, and a failure tells the
// client's router, so the retry may go to another server. A stream the
// server ends without an error (it is draining) is reported UNAVAILABLE,
// so the retry opens a new one. While the model has another server, an
// answer that does not come within the client's replica_attempt_timeout
// gives the stream up (a stalled server: AttemptBound), and the retry goes
// to the next.
template <class Request, class Response>
class BidiExchange {
 public:
  using Stream = grpc::ClientReaderWriter<Request, Response>;
  using Open = std::function<std::unique_ptr<Stream>(
      v1::RegressionService::Stub&, grpc::ClientContext*)>;

  BidiExchange(Client* client, std::string model, Open open)
      : client_(client),
        model_(std::move(model)),
        open_(std::move(open)),
        bound_(client_, model_) {}
  ~BidiExchange() {
    if (stream_ != nullptr) context_->TryCancel();
  }

  // The exchange, retried (callers resend only what may be resent: a
  // sample with its id, a query).
  absl::Status Exchange(const Request& request, Response* response) {
    return RetryCall(client_->options().retry, [&](int /*attempt*/) {
      absl::Status status = ExchangeOnce(request, response);
      if (!status.ok() && server_ != nullptr) {
        ClientRoutes::Of(*client_).Failed(model_, *server_, status);
      }
      return status;
    });
  }

  // Closes the stream; the server's final status.
  absl::Status Close() {
    if (stream_ == nullptr) return absl::OkStatus();
    stream_->WritesDone();
    const absl::Status status = FromGrpcStatus(stream_->Finish());
    stream_.reset();
    return status;
  }

 private:
  absl::Status ExchangeOnce(const Request& request, Response* response) {
    if (stream_ == nullptr) {
      context_ = std::make_unique<grpc::ClientContext>();  // no deadline
      server_ = ClientRoutes::Of(*client_).For(model_);
      stream_ = open_(*server_->regression, context_.get());
    }
    bound_.Arm(context_.get());
    const bool answered = stream_->Write(request) && stream_->Read(response);
    if (bound_.Disarm()) {  // cancelled: the stream is given up
      (void)stream_->Finish();
      stream_.reset();
      absl::Status silent = absl::UnavailableError(absl::StrCat(
          "server ", server_->address, " did not answer within ",
          absl::FormatDuration(client_->options().replica_attempt_timeout),
          "; asking another"));
      if (!answered) return silent;  // told to the router by Exchange
      // The answer came just in time: kept, and the next stream opened
      // elsewhere all the same.
      ClientRoutes::Of(*client_).Failed(model_, *server_, silent);
      return absl::OkStatus();
    }
    if (answered) return absl::OkStatus();
    absl::Status status = Close();
    if (status.ok()) {
      status = absl::UnavailableError("the server closed the stream");
    }
    return status;
  }

  Client* const client_;
  const std::string model_;
  Open open_;
  std::shared_ptr<ServerStubs> server_;  // the stream is open on
  std::unique_ptr<grpc::ClientContext> context_;
  std::unique_ptr<Stream> stream_;
  AttemptBound bound_;  // of each exchange
};

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_LIB_INTERNAL_BIDI_EXCHANGE_H_
