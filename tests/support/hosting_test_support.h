#ifndef STREAMREG_TESTS_SUPPORT_HOSTING_TEST_SUPPORT_H_
#define STREAMREG_TESTS_SUPPORT_HOSTING_TEST_SUPPORT_H_

#include <cmath>
#include <cstdint>
#include <latch>
#include <memory>
#include <vector>

#include "core/model/model_config.h"
#include "core/model/sample.h"
#include "server/hosting/worker_pool.h"

namespace streamreg {

// What the hosting layer's tests share: a small model (2 inputs, one
// target) and batches of samples for it.
inline ModelConfig SmallConfig() {
  ModelConfig config;
  config.input_dim = 2;
  config.target_names = {"y"};
  return config;
}

// Samples with x = (i, i / 2), y = sin(i) and id = first_id + i.
struct Batch {
  std::vector<double> x, y;
  std::vector<Sample> samples;
  Batch(std::size_t n, std::uint64_t first_id) : x(2 * n), y(n) {
    for (std::size_t i = 0; i < n; ++i) {
      x[2 * i] = static_cast<double>(i + first_id);
      x[2 * i + 1] = x[2 * i] / 2;
      y[i] = std::sin(x[2 * i]);
    }
    for (std::size_t i = 0; i < n; ++i) {
      samples.push_back(
          Sample{{&x[2 * i], 2}, {&y[i], 1}, first_id == 0 ? 0 : first_id + i});
    }
  }
};

// Holds a thread of `pool` busy until the returned latch is counted down.
// The blocker is running when this returns: otherwise a queue still
// draining on that thread (a learn stage's warm-up) would take the next
// task first.
inline std::shared_ptr<std::latch> HoldThread(WorkerPool& pool) {
  auto running = std::make_shared<std::latch>(1);
  auto release = std::make_shared<std::latch>(1);
  pool.Post([running, release] {
    running->count_down();
    release->wait();
  });
  running->wait();
  return release;
}

}  // namespace streamreg

#endif  // STREAMREG_TESTS_SUPPORT_HOSTING_TEST_SUPPORT_H_
