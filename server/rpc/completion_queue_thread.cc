#include "server/rpc/completion_queue_thread.h"

#include <pthread.h>

namespace streamreg {

CompletionQueueThread::CompletionQueueThread(grpc::ServerBuilder& builder)
    : queue_(builder.AddCompletionQueue()) {}

CompletionQueueThread::~CompletionQueueThread() { Stop(); }

void CompletionQueueThread::Start() {
  thread_ = std::thread([this] {
    (void)pthread_setname_np(pthread_self(), "rpc-queue");
    Run();
  });
}

void CompletionQueueThread::CallBegan() {
  MutexLock lock(&mutex_);
  ++calls_;
}

void CompletionQueueThread::CallEnded() {
  MutexLock lock(&mutex_);
  if (--calls_ == 0) calls_ended_.SignalAll();
}

void CompletionQueueThread::Stop() {
  if (stopped_) return;
  stopped_ = true;
  if (thread_.joinable()) {
    MutexLock lock(&mutex_);
    while (calls_ > 0) calls_ended_.Wait(&mutex_);
  }
  queue_->Shutdown();
  if (thread_.joinable()) {
    thread_.join();
  } else {
    Run();  // never started: the tags of the calls listened for still end
  }
}

void CompletionQueueThread::Run() {
  void* tag = nullptr;
  bool ok = false;
  while (queue_->Next(&tag, &ok)) static_cast<QueueTag*>(tag)->Completed(ok);
}

}  // namespace streamreg
