#include "server/rpc/async_call.h"

namespace streamreg {

void AsyncCall::OperationStarting() {
  MutexLock lock(&mutex_);
  ++operations_out_;
}

void AsyncCall::OperationEnded() {
  bool done;
  {
    MutexLock lock(&mutex_);
    --operations_out_;
    done = IsDone();
  }
  EndIf(done);
}

void AsyncCall::OnArrival(bool ok) {
  if (!ok) {      // the server is shutting down: no call came (nor will its
    delete this;  // report of being over, which comes only for a call)
    return;
  }
  thread_->CallBegan();
  Arrived();
}

void AsyncCall::OnFinished(bool /*ok: false once the client is gone*/) {
  bool done;
  {
    MutexLock lock(&mutex_);
    finished_done_ = true;
    done = IsDone();
  }
  EndIf(done);
}

void AsyncCall::OnOver(bool /*ok*/) {
  bool done;
  {
    MutexLock lock(&mutex_);
    over_done_ = true;
    done = IsDone();
  }
  EndIf(done);
}

void AsyncCall::EndIf(bool done) {
  if (!done) return;
  Done();
  CompletionQueueThread* const thread = thread_;
  delete this;
  thread->CallEnded();  // last: the queue may be shut down after it
}

}  // namespace streamreg
