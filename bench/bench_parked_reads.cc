// What a parked read costs the server (docs/threading.md): while a read waits
// for its model to learn what its server acknowledged, it holds no thread,
// and every WorkerPool::kWhenPollInterval (2 ms) the reads pool checks it
// under the pool's lock — HostedModel::ReadWaitsForLearning on each model it
// reads, and whether its call was cancelled. Google Benchmark times one check
// of a read that goes on waiting (its model's learning is held), of a
// prediction (one model) and of ListModels pages (10 and 1,000 models, the
// one that waits last), and reports
// the share of one core that many such parked reads take at that poll rate.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <latch>
#include <memory>
#include <vector>

#include "bench/bench_support.h"
#include "benchmark/benchmark.h"
#include "server/hosting/model_registry.h"
#include "server/hosting/parked_read.h"
#include "server/hosting/worker_pool.h"

namespace streamreg {
namespace {

// Models whose learning is held (until the fixture goes); the last has
// samples acknowledged and not learned, so a read pinned now waits for it,
// and not for the others.
class HeldModels {
 public:
  explicit HeldModels(std::size_t count) {
    // Small models: their learned state is not what a check reads.
    for (std::size_t m = 0; m < count; ++m) {
      std::shared_ptr<HostedModel> model = *registry_.Create(
          "m" + std::to_string(m), ArmConfig(MetricKind::kGradientWeights), {});
      if (!model->Learn(stream_.batch(0, 10), nullptr).ok()) std::abort();
      model->CatchUp();
      models_.push_back(std::move(model));
    }
    learning_.Post([this] {
      held_.count_down();
      release_.wait();
    });
    held_.wait();
    if (!models_.back()->Learn(stream_.batch(10, 20), nullptr).ok()) {
      std::abort();
    }
    for (const std::shared_ptr<HostedModel>& model : models_) {
      reads_.push_back({model, model->PinAcknowledged({})});
    }
    if (!models_.back()->ReadWaitsForLearning(reads_.back().after)) {
      std::abort();
    }
  }
  ~HeldModels() { release_.count_down(); }

  const std::vector<ModelRead>& reads() const { return reads_; }

 private:
  const ArmStream stream_{20};  // the held samples point into it
  WorkerPool writes_{1};
  WorkerPool learning_{1};
  ModelRegistry registry_{RegistryLimits{}, HostingPools{&writes_, &learning_}};
  std::vector<std::shared_ptr<HostedModel>> models_;
  std::vector<ModelRead> reads_;
  std::latch held_{1};
  std::latch release_{1};
};

void BM_ParkedReadCheck(benchmark::State& state) {
  static HeldModels* const models = new HeldModels(1000);  // held till exit
  // The last `range(0)` models: those caught up first, the one that waits
  // last, so the check looks at every one.
  const std::vector<ModelRead> reads(
      models->reads().end() - static_cast<std::ptrdiff_t>(state.range(0)),
      models->reads().end());
  // The first check looks at every model once; the figure is the later
  // ones', every poll while the read stays parked.
  ParkedReadCheck check(reads);
  std::atomic<bool> cancelled{false};
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    // PostRead's predicate.
    benchmark::DoNotOptimize(!check.Waits() ||
                             cancelled.load(std::memory_order_relaxed));
  }
  const double seconds_per_check =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count() /
      static_cast<double>(state.iterations());
  const double polls_per_second =
      1.0 /
      std::chrono::duration<double>(WorkerPool::kWhenPollInterval).count();
  // The reads a model's limit lets park (8 by default), 10 models' worth,
  // and a thousand.
  for (const int parked : {8, 80, 1000}) {
    state.counters["core_share_" + std::to_string(parked) + "_parked"] =
        parked * seconds_per_check * polls_per_second;
  }
}
BENCHMARK(BM_ParkedReadCheck)
    ->ArgName("models_read")
    ->Arg(1)
    ->Arg(10)
    ->Arg(1000);

}  // namespace
}  // namespace streamreg

BENCHMARK_MAIN();
