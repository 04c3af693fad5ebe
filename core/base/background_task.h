#ifndef STREAMREG_CORE_BASE_BACKGROUND_TASK_H_
#define STREAMREG_CORE_BASE_BACKGROUND_TASK_H_

#include <atomic>
#include <cassert>
#include <functional>
#include <future>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "core/base/background_priority.h"
#include "core/base/background_thread.h"

namespace streamreg {

// One result computed on a background thread, which its owner starts and
// later collects — the shape of a model's metric refreshes. The result is
// shared (result()) so that a snapshot may wait for it on its own thread
// while the owner goes on. Destroyed while running, it abandons the work:
// requests a stop, then joins.
template <class Result>
class BackgroundTask {
 public:
  BackgroundTask() = default;
  BackgroundTask(const BackgroundTask&) = delete;
  BackgroundTask& operator=(const BackgroundTask&) = delete;

  // Runs `work` on a new thread named `name` (BeginBackgroundThread), after
  // the previous one has ended; with `priority`, lowered until something
  // raises it (RaisablePriority).
  void Start(std::string_view name, std::function<Result(std::stop_token)> work,
             RaisablePriority* priority = nullptr) {
    if (worker_.joinable()) worker_.join();
    if (priority != nullptr) {
      priority->Arm();
      work = [work = std::move(work), priority](std::stop_token stop) {
        priority->LowerCallingThread();
        Result result = work(std::move(stop));
        priority->Done();
        return result;
      };
    }
    // First of all, on the new thread.
    work = [work = std::move(work),
            name = std::string(name)](std::stop_token stop) {
      BeginBackgroundThread(name);
      return work(std::move(stop));
    };
    std::packaged_task<Result(std::stop_token)> task(std::move(work));
    result_ = task.get_future().share();
    running_ = true;
    worker_ = std::jthread(std::move(task));
  }
  // Running again with its result already known (a model restored from a
  // snapshot taken while it ran): Finish() returns `known`.
  void Resume(Result known) {
    if (worker_.joinable()) worker_.join();
    std::promise<Result> promise;
    promise.set_value(std::move(known));
    result_ = promise.get_future().share();
    running_ = true;
  }
  bool running() const { return running_.load(); }
  // The result to come (valid while running).
  std::shared_future<Result> result() const { return result_; }
  // Waits for the result and takes it; no longer running.
  Result Finish() {
    assert(result_.valid());
    if (worker_.joinable()) worker_.join();
    running_ = false;
    Result result = result_.get();
    result_ = {};
    return result;
  }

 private:
  std::jthread worker_;
  std::shared_future<Result> result_;
  std::atomic<bool> running_ = false;
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_BASE_BACKGROUND_TASK_H_
