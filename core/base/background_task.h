#ifndef STREAMREG_CORE_BASE_BACKGROUND_TASK_H_
#define STREAMREG_CORE_BASE_BACKGROUND_TASK_H_

#include <atomic>
#include <cassert>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
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
// while the owner goes on. It may also come from elsewhere (Complete: the
// same result computed by another replica), which stops the work. Destroyed
// while running, it abandons the work: requests a stop, then joins.
//
// Start, Resume, Finish and result() are the owner's, one at a time;
// Complete may run beside them on any thread.
template <class Result>
class BackgroundTask {
 public:
  BackgroundTask() = default;
  BackgroundTask(const BackgroundTask&) = delete;
  BackgroundTask& operator=(const BackgroundTask&) = delete;
  ~BackgroundTask() {
    if (const std::shared_ptr<Outcome> outcome = current(); outcome) {
      outcome->stop.request_stop();
    }
  }

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
    auto outcome = std::make_shared<Outcome>();
    result_ = outcome->promise.get_future().share();
    SetCurrent(outcome);
    running_ = true;
    worker_ = std::jthread(
        [outcome, work = std::move(work), name = std::string(name)] {
          BeginBackgroundThread(name);  // first of all, on the new thread
          try {
            outcome->Set(work(outcome->stop.get_token()));
          } catch (...) {
            outcome->Fail(std::current_exception());
          }
        });
  }
  // Running again with its result already known (a model restored from a
  // snapshot taken while it ran, or a result another replica computed):
  // Finish() returns `known`.
  void Resume(Result known) {
    if (worker_.joinable()) worker_.join();
    auto outcome = std::make_shared<Outcome>();
    result_ = outcome->promise.get_future().share();
    outcome->Set(std::move(known));
    SetCurrent(outcome);
    running_ = true;
  }
  // The running work's result is `known` (unless it has one already): the
  // work is asked to stop and what it returns is dropped. Whether `known`
  // was taken.
  bool Complete(Result known) {
    const std::shared_ptr<Outcome> outcome = current();
    if (outcome == nullptr || !outcome->Set(std::move(known))) return false;
    outcome->stop.request_stop();
    return true;
  }
  bool running() const { return running_.load(); }
  // The result to come (valid while running).
  std::shared_future<Result> result() const { return result_; }
  // Waits for the result and takes it; no longer running.
  Result Finish() {
    assert(result_.valid());
    // A completed work stops at its next look at the stop token.
    if (worker_.joinable()) worker_.join();
    running_ = false;
    SetCurrent(nullptr);
    Result result = result_.get();
    result_ = {};
    return result;
  }

 private:
  // A run's result, set once (by the work or by Complete), and the stop
  // its work looks at.
  struct Outcome {
    std::mutex mutex;
    bool set = false;
    std::promise<Result> promise;
    std::stop_source stop;
    bool Set(Result result) {
      std::lock_guard<std::mutex> lock(mutex);
      if (set) return false;
      set = true;
      promise.set_value(std::move(result));
      return true;
    }
    void Fail(std::exception_ptr error) {
      std::lock_guard<std::mutex> lock(mutex);
      if (set) return;
      set = true;
      promise.set_exception(std::move(error));
    }
  };
  std::shared_ptr<Outcome> current() const {
    std::lock_guard<std::mutex> lock(current_mutex_);
    return current_;
  }
  void SetCurrent(std::shared_ptr<Outcome> outcome) {
    std::lock_guard<std::mutex> lock(current_mutex_);
    current_ = std::move(outcome);
  }

  mutable std::mutex current_mutex_;
  std::shared_ptr<Outcome> current_;  // the run Complete reaches
  std::shared_future<Result> result_;
  std::atomic<bool> running_ = false;
  std::jthread worker_;  // last: joined first
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_BASE_BACKGROUND_TASK_H_
