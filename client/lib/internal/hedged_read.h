#ifndef STREAMREG_CLIENT_LIB_INTERNAL_HEDGED_READ_H_
#define STREAMREG_CLIENT_LIB_INTERNAL_HEDGED_READ_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/lib/errors.h"
#include "client/lib/internal/server_router.h"
#include "client/lib/retry_policy.h"
#include "common/served_by.h"
#include "grpcpp/grpcpp.h"

namespace streamreg {

// One read about a model (a unary call any of its servers can answer:
// GetModel, ListModels, GetMetric, Predict) asked of its servers in turn
// without giving up on any: the server the router names first is asked;
// while no answer has come, the next one `next_after` later, and so on,
// every call left running. The first answer (or an error every server
// would give: INVALID_ARGUMENT, PERMISSION_DENIED, ...) is taken and the
// other calls are cancelled. A server that fails (UNAVAILABLE, ABORTED)
// or answers an error of its own state (NOT_FOUND, FAILED_PRECONDITION: a
// replica not caught up) has the next one asked at once, unless it names
// the model's servers (the next attempt goes there, as the retry policy
// allows). If no server answers, the first error of a server's state is
// returned, else the last failure. So a paused replica costs a read
// `next_after`, and a replica that is only slow (learning what the read
// waits for) still answers if it comes first. The router hears of every
// server that failed and of every one passed over (asked, and cancelled
// unanswered), which the next calls avoid. The calls share one deadline
// and a completion queue that the calling thread drives (no thread of its
// own). One attempt of the client's retry policy.
template <class Response>
class HedgedRead {
 public:
  // Starts the read on `server` (its stub's Async method).
  using Start =
      std::function<std::unique_ptr<grpc::ClientAsyncResponseReader<Response>>(
          ServerStubs& server, grpc::ClientContext* context,
          grpc::CompletionQueue* queue)>;

  HedgedRead(ServerRouter* router, std::string model, absl::Duration timeout,
             absl::Duration next_after)
      : router_(router),
        model_(std::move(model)),
        timeout_(timeout),
        next_after_(next_after) {}
  ~HedgedRead() {
    queue_.Shutdown();  // every call has ended (Run waits for them)
    void* tag = nullptr;
    bool ok = false;
    while (queue_.Next(&tag, &ok)) {
    }
  }
  HedgedRead(const HedgedRead&) = delete;
  HedgedRead& operator=(const HedgedRead&) = delete;

  // The read (its status; *response holds the answer if it is OK).
  absl::Status Run(const Start& start, Response* response);

 private:
  // One server's call.
  struct Call {
    std::shared_ptr<ServerStubs> server;
    grpc::ClientContext context;
    Response response;
    grpc::Status status;
    std::unique_ptr<grpc::ClientAsyncResponseReader<Response>> reader;
    bool finished = false;
  };

  // Whether `status` says that server could not answer (another may).
  static bool ServerFailed(const absl::Status& status) {
    return RetryPolicy::IsRetryable(status) || absl::IsDeadlineExceeded(status);
  }
  // Whether every server would answer the request with `status`.
  static bool DecidedByRequest(const absl::Status& status) {
    switch (status.code()) {
      case absl::StatusCode::kInvalidArgument:
      case absl::StatusCode::kOutOfRange:
      case absl::StatusCode::kUnauthenticated:
      case absl::StatusCode::kPermissionDenied:
      case absl::StatusCode::kUnimplemented:
        return true;
      default:
        return false;
    }
  }

  // Asks the next server not asked yet; false if none is left.
  bool AskNext(const Start& start, absl::Time deadline);
  // The next finished call, or null if `until` came first.
  Call* NextFinished(absl::Time until);
  // Cancels the calls still running and waits for them to end.
  void CancelRunning();

  ServerRouter* const router_;
  const std::string model_;
  const absl::Duration timeout_;
  const absl::Duration next_after_;
  grpc::CompletionQueue queue_;
  std::vector<std::unique_ptr<Call>> calls_;
  std::vector<std::string> asked_;
  std::size_t running_ = 0;
  // A failure named the model's servers: no more are asked in this attempt.
  bool redirected_ = false;
};

template <class Response>
absl::Status HedgedRead<Response>::Run(const Start& start, Response* response) {
  calls_.clear();
  asked_.clear();
  redirected_ = false;
  const absl::Time deadline = absl::Now() + timeout_;
  absl::Status failure = absl::UnavailableError(
      absl::StrCat("no server to ask about '", model_, "'"));
  Call* answer = nullptr;
  Call* refusal = nullptr;  // the first server's own error
  absl::Time ask_next_at = AskNext(start, deadline) ? absl::Now() + next_after_
                                                    : absl::InfiniteFuture();
  while (running_ > 0 && answer == nullptr) {
    Call* finished = NextFinished(ask_next_at);
    if (finished == nullptr) {  // nothing for next_after: one more server
      ask_next_at = AskNext(start, deadline) ? absl::Now() + next_after_
                                             : absl::InfiniteFuture();
      continue;
    }
    absl::Status status = FromGrpcStatus(finished->status, finished->context);
    if (status.ok() || DecidedByRequest(status)) {
      answer = finished;
    } else if (!ServerFailed(status)) {
      // This server's state (a replica with no samples yet, one that has
      // not heard of the model): another server may answer.
      if (refusal == nullptr) refusal = finished;
      if (AskNext(start, deadline)) ask_next_at = absl::Now() + next_after_;
    } else {
      router_->Failed(model_, *finished->server, status);
      // Servers the failure names are the retry's to ask.
      redirected_ = redirected_ || !ServedBy(status).empty();
      failure = std::move(status);
      if (AskNext(start, deadline)) ask_next_at = absl::Now() + next_after_;
    }
  }
  CancelRunning();
  if (answer == nullptr) answer = refusal;
  if (answer == nullptr) return failure;
  for (const std::unique_ptr<Call>& call : calls_) {
    if (call.get() != answer &&
        call->status.error_code() == grpc::StatusCode::CANCELLED) {
      router_->Failed(model_, *call->server,
                      absl::UnavailableError(absl::StrCat(
                          "server ", call->server->address,
                          " did not answer before ", answer->server->address)));
    }
  }
  const absl::Status status = FromGrpcStatus(answer->status, answer->context);
  if (status.ok()) *response = std::move(answer->response);
  return status;
}

template <class Response>
bool HedgedRead<Response>::AskNext(const Start& start, absl::Time deadline) {
  if (redirected_) return false;
  std::shared_ptr<ServerStubs> server = router_->NextFor(model_, asked_);
  if (server == nullptr) return false;
  asked_.push_back(server->address);
  calls_.push_back(std::make_unique<Call>());
  Call& call = *calls_.back();
  call.server = std::move(server);
  call.context.set_deadline(absl::ToChronoTime(deadline));
  call.reader = start(*call.server, &call.context, &queue_);
  call.reader->Finish(&call.response, &call.status, &call);
  ++running_;
  return true;
}

template <class Response>
typename HedgedRead<Response>::Call* HedgedRead<Response>::NextFinished(
    absl::Time until) {
  void* tag = nullptr;
  bool ok = false;
  if (until == absl::InfiniteFuture()) {
    queue_.Next(&tag, &ok);  // the calls' deadline bounds the wait
  } else if (queue_.AsyncNext(&tag, &ok, absl::ToChronoTime(until)) !=
             grpc::CompletionQueue::GOT_EVENT) {
    return nullptr;
  }
  Call* call = static_cast<Call*>(tag);
  call->finished = true;
  --running_;
  return call;
}

template <class Response>
void HedgedRead<Response>::CancelRunning() {
  for (const std::unique_ptr<Call>& call : calls_) {
    if (!call->finished) call->context.TryCancel();
  }
  while (running_ > 0) NextFinished(absl::InfiniteFuture());
}

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_LIB_INTERNAL_HEDGED_READ_H_
