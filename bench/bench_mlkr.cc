// streamreg-bench-mlkr: the cost and effect of MLKR's batch fit
// (core/metric/mlkr_fit.h) on the simulated arm's stream: n samples (d =
// 21, m = 7 torques), inputs and torques standardized, fitted from the
// scaled identity; prints the time, the objective before and after, and
// the held-out error of the Nadaraya-Watson estimate over the c nearest
// under the initial and the fitted map (a second arm 37 s later).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <string>
#include <tuple>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "bench/bench_support.h"
#include "core/index/cover_tree.h"
#include "core/metric/mlkr_fit.h"
#include "core/metric/mlkr_objective.h"

ABSL_FLAG(int, n, 100000, "Samples fitted");
ABSL_FLAG(int, queries, 2000, "Held-out samples scored");
ABSL_FLAG(int, neighbors, 64, "c: each point's nearest under the map");
ABSL_FLAG(int, rank, 0, "Rows of the map (0: d)");
ABSL_FLAG(int, max_steps, 200, "Evaluations of the objective at most");
ABSL_FLAG(int, threads, 2, "Threads");
ABSL_FLAG(int, exclude_within, 0,
          "Leave each sample's neighbours within this many stream positions "
          "out of its estimate (the honest error's W)");

namespace streamreg {
namespace {

// Standardizes the columns of `values` (n x width) in place with the
// means and standard deviations of `reference` (the fitted samples').
void Standardize(const std::vector<double>& reference, std::size_t width,
                 std::vector<double>& values) {
  const std::size_t n = reference.size() / width;
  for (std::size_t k = 0; k < width; ++k) {
    double sum = 0.0, squares = 0.0;
    for (std::size_t i = 0; i < n; ++i) sum += reference[i * width + k];
    const double mean = sum / static_cast<double>(n);
    for (std::size_t i = 0; i < n; ++i) {
      const double centred = reference[i * width + k] - mean;
      squares += centred * centred;
    }
    const double sd = std::sqrt(squares / static_cast<double>(n));
    for (std::size_t i = 0; i < values.size() / width; ++i) {
      values[i * width + k] =
          (values[i * width + k] - mean) / (sd > 0.0 ? sd : 1.0);
    }
  }
}

// Mean over targets of the held-out mean squared error (of standardized
// targets) of the estimate over each query's c nearest under A.
double HeldOut(const MlkrSamples& train, const std::vector<double>& x,
               const std::vector<double>& y, std::span<const double> a,
               std::size_t rank, std::size_t c) {
  const std::size_t d = train.d;
  std::vector<double> mapped(train.n * rank, 0.0);
  const auto map = [&](const double* point, double* out) {
    for (std::size_t r = 0; r < rank; ++r) {
      double sum = 0.0;
      for (std::size_t k = 0; k < d; ++k) sum += a[r * d + k] * point[k];
      out[r] = sum;
    }
  };
  for (std::size_t i = 0; i < train.n; ++i) {
    map(train.x.data() + i * d, mapped.data() + i * rank);
  }
  std::vector<std::uint64_t> ids(train.n);
  std::iota(ids.begin(), ids.end(), std::uint64_t{0});
  const CoverTree tree = *CoverTree::Build(rank, mapped, ids);
  const std::size_t queries = y.size() / train.m;
  std::vector<Neighbor> found;
  std::vector<double> z(rank);
  std::vector<const double*> xs, ys;
  double sum = 0.0;
  for (std::size_t q = 0; q < queries; ++q) {
    map(x.data() + q * d, z.data());
    tree.Knn(z, c, &found).IgnoreError();
    xs.clear();
    ys.clear();
    for (const Neighbor& neighbor : found) {
      xs.push_back(train.x.data() + neighbor.id * d);
      ys.push_back(train.y.data() + neighbor.id * train.m);
    }
    sum +=
        MlkrPointLoss({x.data() + q * d, d}, {y.data() + q * train.m, train.m},
                      xs, ys, a, rank, nullptr);
  }
  return sum / static_cast<double>(queries * train.m);
}

// Prints what one search for every sample's c nearest under A costs: the
// cover tree over the mapped samples, then the n searches (the work of one
// of the fit's neighbour refreshes).
void PrintNeighbourSearch(const char* name, const MlkrSamples& samples,
                          std::span<const double> a, std::size_t rank,
                          std::size_t c, std::size_t window) {
  const std::size_t n = samples.n;
  const std::size_t d = samples.d;
  std::vector<double> mapped(n * rank, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t r = 0; r < rank; ++r) {
      double sum = 0.0;
      for (std::size_t k = 0; k < d; ++k) {
        sum += a[r * d + k] * samples.x[i * d + k];
      }
      mapped[i * rank + r] = sum;
    }
  }
  std::vector<std::uint64_t> ids(n);
  std::iota(ids.begin(), ids.end(), std::uint64_t{0});
  const BenchClock::time_point start = BenchClock::now();
  const CoverTree tree = *CoverTree::Build(rank, mapped, ids);
  const double build = Seconds(BenchClock::now() - start);
  const BenchClock::time_point searched = BenchClock::now();
  const MlkrNeighbors neighbors = NearestUnderMap(samples, a, rank, c, window);
  const double all = Seconds(BenchClock::now() - searched);
  std::printf(
      "one neighbour search under the %s map: %.1f ms (the tree alone %.1f "
      "ms, %zu nodes), %zu neighbours\n",
      name, all * 1e3, build * 1e3, tree.size(), neighbors.ids.size());
}

int Main() {
  for (const auto& [name, value, least] :
       {std::tuple{"n", absl::GetFlag(FLAGS_n), 2},
        {"queries", absl::GetFlag(FLAGS_queries), 1},
        {"neighbors", absl::GetFlag(FLAGS_neighbors), 1},
        {"rank", absl::GetFlag(FLAGS_rank), 0},
        {"max_steps", absl::GetFlag(FLAGS_max_steps), 1},
        {"threads", absl::GetFlag(FLAGS_threads), 1},
        {"exclude_within", absl::GetFlag(FLAGS_exclude_within), 0}}) {
    if (value < least) {
      std::fprintf(stderr, "streamreg-bench-mlkr: --%s must be >= %d, got %d\n",
                   name, least, value);
      return 2;
    }
  }
  const auto n = static_cast<std::size_t>(absl::GetFlag(FLAGS_n));
  const auto queries = static_cast<std::size_t>(absl::GetFlag(FLAGS_queries));
  const ArmStream learned(n);
  const ArmStream held_out(queries, n + 37000, 2);
  const std::size_t d = kRobotInputs;
  const std::size_t m = kArmJoints;
  std::vector<double> x = learned.inputs.coordinates;
  std::vector<double> y = learned.torques;
  std::vector<double> test_x = held_out.inputs.coordinates;
  std::vector<double> test_y = held_out.torques;
  Standardize(learned.inputs.coordinates, d, test_x);
  Standardize(learned.torques, m, test_y);
  Standardize(learned.inputs.coordinates, d, x);
  Standardize(learned.torques, m, y);
  const MlkrSamples samples{n, d, m, x, y};

  MlkrFitOptions options;
  options.rank = static_cast<std::size_t>(absl::GetFlag(FLAGS_rank));
  options.neighbors = static_cast<std::size_t>(absl::GetFlag(FLAGS_neighbors));
  options.max_steps = static_cast<std::size_t>(absl::GetFlag(FLAGS_max_steps));
  options.threads = static_cast<std::size_t>(absl::GetFlag(FLAGS_threads));
  options.exclude_within =
      static_cast<std::size_t>(absl::GetFlag(FLAGS_exclude_within));
  const BenchClock::time_point start = BenchClock::now();
  const std::vector<double> initial = InitialMlkrMap(samples);
  const absl::StatusOr<MlkrFit> fit = FitMlkr(samples, initial, options);
  const double seconds = Seconds(BenchClock::now() - start);
  if (!fit.ok()) {
    std::fprintf(stderr, "%s\n", std::string(fit.status().message()).c_str());
    return 1;
  }
  std::printf(
      "n %zu d %zu m %zu rank %zu c %zu W %zu threads %zu: fit %.0f ms (%zu "
      "evaluations, %zu neighbour searches, %.1f ms a step)\n",
      n, d, m, fit->rank, options.neighbors, options.exclude_within,
      options.threads, seconds * 1e3, fit->steps, fit->refreshes,
      seconds * 1e3 / static_cast<double>(fit->steps));
  PrintNeighbourSearch("initial", samples, initial, d, options.neighbors,
                       options.exclude_within);
  PrintNeighbourSearch("fitted", samples, fit->a, fit->rank, options.neighbors,
                       options.exclude_within);
  std::printf("objective per sample and target: %.4f -> %.4f\n",
              fit->initial_loss / static_cast<double>(n * m),
              fit->loss / static_cast<double>(n * m));
  std::printf(
      "held-out MSE of standardized torques (NW over the %zu nearest): "
      "initial map %.4f, fitted %.4f\n",
      options.neighbors,
      HeldOut(samples, test_x, test_y, initial, d, options.neighbors),
      HeldOut(samples, test_x, test_y, fit->a, fit->rank, options.neighbors));
  return 0;
}

}  // namespace
}  // namespace streamreg

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "usage: streamreg-bench-mlkr [--n N] [--neighbors C] [--rank R]\n"
      "    [--exclude_within W] [--max_steps S] [--threads T]\n\n"
      "MLKR's batch fit on the simulated arm: its time, objective and "
      "held-out error. Figures, not a test: bench/notes/results-history.md has "
      "them.");
  absl::ParseCommandLine(argc, argv);
  return streamreg::Main();
}
