#ifndef STREAMREG_SERVER_RPC_ASYNC_CALL_H_
#define STREAMREG_SERVER_RPC_ASYNC_CALL_H_

#include "absl/base/thread_annotations.h"
#include "core/base/mutex.h"
#include "grpcpp/grpcpp.h"
#include "server/rpc/completion_queue_thread.h"
#include "server/rpc/queue_tag.h"

namespace streamreg {

// One call served through the server's completion queue
// (CompletionQueueThread), from the moment it is listened for until it is
// done: its ServerContext, the operations it has out, and its end. The
// kinds of call (server/rpc/async_unary_call.h, async_stream_calls.h)
// derive from it; when one arrives it listens for the next call of its
// method, then begins serving (its reactor). Reads, writes and the finish
// may be started from any thread; their completions run on the queue's
// thread. The call is done once its finish has completed, gRPC has
// reported it over (ServerContext::AsyncNotifyWhenDone, after which
// IsCancelled tells whether it was cancelled) and no read or write of it is
// out: then Done (its reactor's OnDone) runs and the call deletes itself,
// as gRPC's callback API ends a reactor.
class AsyncCall {
 public:
  AsyncCall(const AsyncCall&) = delete;
  AsyncCall& operator=(const AsyncCall&) = delete;

  grpc::ServerContext* context() { return &context_; }

 protected:
  // Served through `thread`'s queue.
  explicit AsyncCall(CompletionQueueThread* thread) : thread_(thread) {
    context_.AsyncNotifyWhenDone(&over_);
  }
  virtual ~AsyncCall() = default;

  // The tag to request the call with (its arrival).
  void* arrival_tag() { return &arrival_; }
  // A read or write is about to start: counted out until OperationEnded.
  void OperationStarting() ABSL_LOCKS_EXCLUDED(mutex_);
  // A read's or write's completion was handled (on the queue's thread):
  // ends the call if that was all it waited for. The call may be gone
  // after it.
  void OperationEnded() ABSL_LOCKS_EXCLUDED(mutex_);
  // The finish is about to start: the tag to start it with.
  void* FinishStarting() { return &finished_; }
  // Starts the finish of a call that answers with one message
  // (`responder`: gRPC's ServerAsyncResponseWriter or ServerAsyncReader):
  // the response if `status` is OK, the status alone otherwise.
  template <typename Responder, typename Response>
  void FinishAnswering(Responder& responder, const Response& response,
                       const grpc::Status& status) {
    if (status.ok()) {
      responder.Finish(response, status, FinishStarting());
    } else {
      responder.FinishWithError(status, FinishStarting());
    }
  }

  // The call has arrived: listen for the next call of its method, then
  // begin serving this one.
  virtual void Arrived() = 0;
  // The call is done: nothing of it runs after this (the reactor's OnDone).
  virtual void Done() = 0;

 private:
  void OnArrival(bool ok);
  void OnFinished(bool ok) ABSL_LOCKS_EXCLUDED(mutex_);
  void OnOver(bool ok) ABSL_LOCKS_EXCLUDED(mutex_);
  // Whether the call is done.
  bool IsDone() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    return finished_done_ && over_done_ && operations_out_ == 0;
  }
  // Done, then deleted, if `done`.
  void EndIf(bool done);

  CompletionQueueThread* const thread_;
  grpc::ServerContext context_;
  MemberTag<AsyncCall> arrival_{this, &AsyncCall::OnArrival};
  MemberTag<AsyncCall> finished_{this, &AsyncCall::OnFinished};
  MemberTag<AsyncCall> over_{this, &AsyncCall::OnOver};
  Mutex mutex_;
  int operations_out_ ABSL_GUARDED_BY(mutex_) = 0;
  bool finished_done_ ABSL_GUARDED_BY(mutex_) = false;
  bool over_done_ ABSL_GUARDED_BY(mutex_) = false;
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_RPC_ASYNC_CALL_H_
