#ifndef STREAMREG_SERVER_RPC_COMPLETION_QUEUE_THREAD_H_
#define STREAMREG_SERVER_RPC_COMPLETION_QUEUE_THREAD_H_

#include <memory>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "core/base/mutex.h"
#include "grpcpp/grpcpp.h"
#include "server/rpc/queue_tag.h"

namespace streamreg {

// The server's one completion queue and the one thread that takes its
// events: every method of the server's own services is served through it
// (gRPC's async API; server/rpc/async_*_call.h). One queue and one thread:
// on this design's measurements (bench/notes/issue-73-server-cpu.md,
// "gRPC's APIs on one stream"), a Learn message costs gRPC about half the
// CPU its callback API costs, and a second queue with a thread of its own,
// or any callback service beside it, brings the cost back: their threads
// poll the same connections and hand each event on. Work on the thread
// stays short; what may wait goes to the server's pools.
//
// Made before the gRPC server is built (it adds the queue to the builder),
// started after, stopped after the server's Shutdown returned. It counts
// the calls that have arrived and are not done (AsyncCall): gRPC's
// Shutdown returns with calls still ending (a cancelled call's reactor
// still finishes it), and an operation started on a queue that is shut
// down aborts the process, so Stop waits for them first.
class CompletionQueueThread {
 public:
  explicit CompletionQueueThread(grpc::ServerBuilder& builder);
  // Stops, if not yet.
  ~CompletionQueueThread();
  CompletionQueueThread(const CompletionQueueThread&) = delete;
  CompletionQueueThread& operator=(const CompletionQueueThread&) = delete;

  grpc::ServerCompletionQueue* queue() const { return queue_.get(); }
  // Starts the thread (named "rpc-queue"; it inherits the starting
  // thread's scheduling, as gRPC's own threads do).
  void Start();
  // Waits until every call that arrived is done, then shuts the queue
  // down and waits until the thread has taken every event left (the tags
  // of the calls listened for). Idempotent.
  void Stop() ABSL_LOCKS_EXCLUDED(mutex_);

  // A call arrived; one is done (AsyncCall).
  void CallBegan() ABSL_LOCKS_EXCLUDED(mutex_);
  void CallEnded() ABSL_LOCKS_EXCLUDED(mutex_);

 private:
  void Run();

  std::unique_ptr<grpc::ServerCompletionQueue> queue_;
  std::thread thread_;
  bool stopped_ = false;
  Mutex mutex_;
  CondVar calls_ended_;
  int calls_ ABSL_GUARDED_BY(mutex_) = 0;
};

}  // namespace streamreg

#endif  // STREAMREG_SERVER_RPC_COMPLETION_QUEUE_THREAD_H_
