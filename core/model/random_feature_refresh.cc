#include "core/model/random_feature_refresh.h"

#include <algorithm>
#include <utility>

namespace streamreg {
namespace {

// The stored samples are read this many at a time (the owner's lock is
// held for each read).
constexpr std::size_t kChunk = 4096;

}  // namespace

RandomFeatureRefresh::~RandomFeatureRefresh() { StopWorker(); }

void RandomFeatureRefresh::StopWorker() {
  if (!worker_.joinable()) return;
  worker_.request_stop();
  {
    MutexLock lock(&mutex_);
    changed_.SignalAll();
  }
  worker_.join();
}

void RandomFeatureRefresh::Start(Job job, CopySlotRows rows) {
  StopWorker();
  const std::size_t dim = job.transform.dim();
  built_.emplace(Built{std::move(job.transform),
                       RandomFeatureRidge(dim, job.num_targets, job.options)});
  {
    MutexLock lock(&mutex_);
    pending_.clear();
    busy_ = false;
    stored_done_ = false;
  }
  running_ = true;
  worker_ =
      std::jthread([this, num_slots = job.num_slots, rows = std::move(rows)](
                       std::stop_token stop) { Run(stop, num_slots, rows); });
}

void RandomFeatureRefresh::Resume(Built captured) {
  StopWorker();
  built_.emplace(std::move(captured));
  {
    MutexLock lock(&mutex_);
    pending_.clear();
    busy_ = false;
    stored_done_ = false;
  }
  running_ = true;
  worker_ = std::jthread(
      [this](std::stop_token stop) { Run(stop, 0, CopySlotRows()); });
}

void RandomFeatureRefresh::Run(std::stop_token stop, std::size_t num_slots,
                               CopySlotRows rows) {
  // Until the job is idle, the ridge is this thread's alone.
  Built& built = *built_;
  const std::size_t d = built.ridge.dim();
  const std::size_t m = built.ridge.num_targets();
  std::vector<double> z(d);
  const auto learn = [&](const double* x, const double* y) {
    built.transform.Apply({x, d}, z);
    built.ridge.Add(z, {y, m});
  };
  std::vector<double> x, y;
  for (std::size_t begin = 0; begin < num_slots; begin += kChunk) {
    if (stop.stop_requested()) return;
    const std::size_t end = std::min(num_slots, begin + kChunk);
    rows(begin, end, &x, &y);
    for (std::size_t slot = 0; slot < end - begin; ++slot) {
      learn(x.data() + slot * d, y.data() + slot * m);
    }
  }
  std::deque<std::vector<double>> batch;
  {
    MutexLock lock(&mutex_);
    stored_done_ = true;
    changed_.SignalAll();
  }
  while (true) {
    {
      MutexLock lock(&mutex_);
      while (pending_.empty() && !stop.stop_requested()) {
        changed_.Wait(&mutex_);
      }
      if (stop.stop_requested()) return;
      batch.swap(pending_);
      busy_ = true;
    }
    for (const std::vector<double>& row : batch) {
      learn(row.data(), row.data() + d);
    }
    batch.clear();
    MutexLock lock(&mutex_);
    busy_ = false;
    changed_.SignalAll();
  }
}

void RandomFeatureRefresh::Feed(std::span<const double> x,
                                std::span<const double> y) {
  std::vector<double> row(x.begin(), x.end());
  row.insert(row.end(), y.begin(), y.end());
  MutexLock lock(&mutex_);
  pending_.push_back(std::move(row));
  changed_.SignalAll();
}

void RandomFeatureRefresh::WaitUntilIdle() const {
  while (!stored_done_ || busy_ || !pending_.empty()) changed_.Wait(&mutex_);
}

RandomFeatureRefresh::Built RandomFeatureRefresh::Capture() const {
  MutexLock lock(&mutex_);
  WaitUntilIdle();
  return *built_;
}

RandomFeatureRefresh::Built RandomFeatureRefresh::Finish() {
  {
    MutexLock lock(&mutex_);
    WaitUntilIdle();
  }
  StopWorker();
  Built built = std::move(*built_);
  built_.reset();
  running_ = false;
  return built;
}

}  // namespace streamreg
