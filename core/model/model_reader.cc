#include "core/model/model_reader.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/regression/local_linear.h"

namespace streamreg {
namespace {

void Fallback(const ModelState& state, std::size_t target, Prediction* out)
    ABSL_SHARED_LOCKS_REQUIRED(state.lock) {
  out->value[target] = state.targets.mean()[target];
  out->spread[target] = std::sqrt(state.targets.Variance(target));
  out->neighbors[target] = 0;
}

}  // namespace

void PredictWithModel(const ModelState& state, std::span<const double> x,
                      Prediction* out) {
  const std::size_t m = state.config.num_targets();
  out->value.assign(m, 0.0);
  out->spread.assign(m, 0.0);
  out->neighbors.assign(m, 0);
  thread_local std::vector<Neighbor> found;
  thread_local NeighborTargets near(0);
  thread_local std::vector<double> z;
  if (near.num_targets() != m) near = NeighborTargets(m);
  z.resize(state.config.input_dim);
  while (true) {
    {
      SharedLock lock(state.lock);
      // Between a sample's storage and its refresh schedule the model is
      // not the model of any whole number of samples: wait that out.
      if (!state.settling.load(std::memory_order_acquire)) {
        out->learned = state.store.seen();
        for (std::size_t i = 0; i < state.predictions.size(); ++i) {
          const std::shared_ptr<const MetricIndex::Generation> generation =
              state.predictions[i].index->current();
          generation->transform.Apply(x, z);
          // One search serves every target: at the widest bandwidth (or
          // largest k) any of them predicts with now.
          GatherNeighbors(state, *generation, z, WidestChoice(state, i), &found,
                          &near);
          PredictTargets(state, i, near, out);
        }
        return;
      }
    }
    state.WaitUntilSettled();
  }
}

std::size_t WidestChoice(const ModelState& state, std::size_t index) {
  std::size_t widest = 0;
  for (std::size_t t : state.predictions[index].targets) {
    widest = std::max(widest, state.selectors[index].Best(t));
  }
  return widest;
}

void GatherNeighbors(const ModelState& state,
                     const MetricIndex::Generation& generation,
                     std::span<const double> z, std::size_t grid_index,
                     std::vector<Neighbor>* found, NeighborTargets* near) {
  const ModelConfig& config = state.config;
  // Called with the lock held shared (the analysis cannot see into a
  // lambda, hence the pointer).
  const SampleStore* store = &state.store;
  const auto targets = [store](std::uint64_t slot) { return store->y(slot); };
  switch (config.regressor) {
    case RegressorKind::kKernel:
      generation.tree
          .RangeUnordered(z, config.bandwidth_grid[grid_index], found)
          .IgnoreError();
      near->GatherInShells(config.bandwidth_grid, found, targets);
      break;
    case RegressorKind::kNearest:
      generation.tree.Knn(z, config.k_grid[grid_index], found).IgnoreError();
      near->Gather(*found, targets);
      break;
    case RegressorKind::kLocalLinear:
      // The neighbours' coordinates, read from the same tree as the search.
      generation.tree.Read([&](const CoverTree& tree) {
        tree.Knn(z, config.k_grid[grid_index], found).IgnoreError();
        thread_local std::vector<double> point;
        point.resize(z.size());
        near->GatherWithOffsets(*found, z, targets, [&](std::uint64_t id) {
          return tree.PointOf(id, point.data()).data();
        });
      });
      break;
  }
}

void PredictTargets(const ModelState& state, std::size_t index,
                    const NeighborTargets& near, Prediction* out) {
  const ModelConfig& config = state.config;
  const PrequentialSelector& selector = state.selectors[index];
  // Targets grouped by their choice: one average per distinct choice, each
  // over its own targets only.
  thread_local std::vector<std::pair<std::size_t, std::size_t>> by_choice;
  thread_local std::vector<std::size_t> group;
  by_choice.clear();
  for (std::size_t t : state.predictions[index].targets) {
    by_choice.push_back({selector.Best(t), t});
  }
  std::sort(by_choice.begin(), by_choice.end());
  LocalAverage average;
  for (std::size_t begin = 0; begin < by_choice.size();) {
    const std::size_t best = by_choice[begin].first;
    group.clear();
    std::size_t end = begin;
    for (; end < by_choice.size() && by_choice[end].first == best; ++end) {
      group.push_back(by_choice[end].second);
    }
    switch (config.regressor) {
      case RegressorKind::kKernel:
        KernelAverageAt(config.kernel, config.bandwidth_grid[best], near,
                        &average, group);
        break;
      case RegressorKind::kNearest:
        NearestAverageAt(config.k_grid[best], near, &average, group);
        break;
      case RegressorKind::kLocalLinear:
        LocalLinearAt(config.k_grid[best], config.local_linear_ridge, near,
                      &average, group);
        break;
    }
    for (std::size_t t : group) {
      if (average.neighbors == 0) {
        Fallback(state, t, out);
        continue;
      }
      out->value[t] = average.value[t];
      out->spread[t] = average.spread[t];
      out->neighbors[t] = static_cast<std::uint32_t>(average.neighbors);
    }
    begin = end;
  }
}

}  // namespace streamreg
