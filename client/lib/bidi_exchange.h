#ifndef STREAMREG_CLIENT_LIB_BIDI_EXCHANGE_H_
#define STREAMREG_CLIENT_LIB_BIDI_EXCHANGE_H_

#include <functional>
#include <memory>

#include "absl/status/status.h"
#include "client/lib/client.h"
#include "grpcpp/grpcpp.h"

namespace streamreg {

// One request, one response over a bidirectional stream that is opened on
// first use and reopened after it breaks (LearnSession, PredictSession).
// A stream the server ends without an error (it is draining) is reported
// UNAVAILABLE, so the caller's retry opens a new one.
template <class Request, class Response>
class BidiExchange {
 public:
  using Stream = grpc::ClientReaderWriter<Request, Response>;
  using Open = std::function<std::unique_ptr<Stream>(grpc::ClientContext*)>;

  explicit BidiExchange(Open open) : open_(std::move(open)) {}
  ~BidiExchange() {
    if (stream_ != nullptr) context_->TryCancel();
  }

  absl::Status Exchange(const Request& request, Response* response) {
    if (stream_ == nullptr) {
      context_ = std::make_unique<grpc::ClientContext>();  // no deadline
      stream_ = open_(context_.get());
    }
    if (stream_->Write(request) && stream_->Read(response)) {
      return absl::OkStatus();
    }
    absl::Status status = Close();
    if (status.ok()) {
      status = absl::UnavailableError("the server closed the stream");
    }
    return status;
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
  Open open_;
  std::unique_ptr<grpc::ClientContext> context_;
  std::unique_ptr<Stream> stream_;
};

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_LIB_BIDI_EXCHANGE_H_
