// streamreg-bench-index: the cover tree against nanoflann's kd-trees and a
// brute-force scan, side by side in one run. Prints a table and writes JSON
// (--json). Figures, not a test: see bench/README.md for the targets.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "common/command_line.h"
#include "common/csv_table.h"
#include "common/percentile.h"
#include "core/base/running_moments.h"
#include "core/index/brute_force_search.h"
#include "core/index/concurrent_cover_tree.h"
#include "core/index/cover_tree.h"
#include "core/index/search_rules.h"
#include "core/metric/metric_transform.h"
#include "nanoflann.hpp"
#include "nlohmann/json.hpp"
#include "tests/support/synthetic_points.h"

ABSL_FLAG(std::string, json, "", "Write the results as JSON to this file");
ABSL_FLAG(std::string, sizes, "10000,100000", "Comma-separated values of n");
ABSL_FLAG(std::string, datasets, "trajectory,uniform",
          "Comma-separated data sets: trajectory (queried at random states "
          "of it), ticks (the same points, queried at the states that follow "
          "them, in order), uniform");
ABSL_FLAG(std::string, csv, "",
          "Also measure a real data set: a CSV with a header whose inputs are "
          "the columns not named target_* or id_* (data/README.md convention); "
          "standardized, every 4th row held out as a query");
ABSL_FLAG(int, k, 10, "Neighbours per k-NN query");
ABSL_FLAG(int, queries, 2000, "Held-out queries per data set (>= 1000)");
ABSL_FLAG(int, brute_queries, 1000, "Queries timed for the brute force");
ABSL_FLAG(int, rounds, 3,
          "Query timing rounds; each query's figure is its fastest round");

namespace streamreg {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kDim = 21;

double MicrosSince(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start)
      .count();
}

struct Figure {
  std::string dataset, index, op;
  std::size_t n, d;
  double median_us, p99_us;
};

struct DataSet {
  std::string name;
  PointSet train, queries;
};

// Median and 99th percentile of per-operation times.
Figure Summarize(const DataSet& data, std::string index, std::string op,
                 const std::vector<double>& times_us) {
  return {data.name,
          std::move(index),
          std::move(op),
          data.train.size(),
          data.train.dim,
          Percentile(times_us, 0.5),
          Percentile(times_us, 0.99)};
}

// A one-off operation (a build), its time as the median.
Figure Once(const DataSet& data, std::string index, std::string op, double us) {
  return {data.name,
          std::move(index),
          std::move(op),
          data.train.size(),
          data.train.dim,
          us,
          0.0};
}

// nanoflann's view of the first `count` points of a PointSet.
struct NanoflannPoints {
  const PointSet* points;
  std::size_t count;
  std::size_t kdtree_get_point_count() const { return count; }
  double kdtree_get_pt(std::size_t i, std::size_t j) const {
    return points->coordinates[i * points->dim + j];
  }
  template <class Box>
  bool kdtree_get_bbox(Box&) const {
    return false;
  }
};
using Metric = nanoflann::L2_Simple_Adaptor<double, NanoflannPoints>;
using StaticKdTree =
    nanoflann::KDTreeSingleIndexAdaptor<Metric, NanoflannPoints, -1,
                                        std::size_t>;
using DynamicKdTree =
    nanoflann::KDTreeSingleIndexDynamicAdaptor<Metric, NanoflannPoints, -1,
                                               std::size_t>;

DataSet MakeDataSet(const std::string& name, std::size_t n,
                    std::size_t queries) {
  if (name == "trajectory") {
    return {name, ArmPoints(n, 7, 2006), ArmQueries(n, 7, queries, 2006)};
  }
  if (name == "ticks") {
    return {name, ArmPoints(n, 7, 2006), ArmTicks(n, 7, queries, 2006)};
  }
  return {name, UniformPoints(n, kDim, 2006), UniformPoints(queries, kDim, 1)};
}

// A query workload timed against one index: fn(query) runs one query.
struct QueryTask {
  std::string index, op;
  std::size_t count;  // queries timed
  std::function<void(std::span<const double>)> fn;
};

// Standardization by the points' own mean and standard deviation.
MetricTransform TrainingStandardization(const PointSet& points) {
  RunningMoments moments(points.dim);
  for (std::size_t i = 0; i < points.size(); ++i) moments.Add(points.point(i));
  return MetricTransform::Standardizing(moments);
}

// A real data set from a CSV file (data/README.md convention: a header; inputs
// are the columns not named target_* or id_*). Every 4th row is a held-out
// query, the rest the indexed points; inputs are standardized with the
// indexed points' mean and standard deviation, as the engine does.
absl::StatusOr<DataSet> LoadCsvDataSet(const std::string& path) {
  absl::StatusOr<CsvTable> table = CsvTable::Read(path);
  if (!table.ok()) return table.status();
  absl::StatusOr<std::vector<std::size_t>> inputs = table->InputColumns({});
  if (!inputs.ok()) return inputs.status();
  const std::size_t dim = inputs->size();
  DataSet data{table->stem(), PointSet{dim, {}}, PointSet{dim, {}}};
  for (std::size_t row = 0; row < table->num_rows(); ++row) {
    PointSet& into = row % 4 == 3 ? data.queries : data.train;
    for (std::size_t c : *inputs)
      into.coordinates.push_back(table->value(row, c));
  }
  if (data.train.size() == 0 || data.queries.size() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": too few rows"));
  }
  const MetricTransform standardize = TrainingStandardization(data.train);
  for (PointSet* set : {&data.train, &data.queries}) {
    for (std::size_t i = 0; i < set->size(); ++i) {
      std::span<double> x(set->coordinates.data() + i * dim, dim);
      standardize.Apply(std::vector<double>(x.begin(), x.end()), x);
    }
  }
  return data;
}

// Times every task on its queries, `rounds` times over, the tasks
// interleaved within each round so that all indexes see the same machine;
// each query's figure is its fastest round (this VM's neighbours make single
// timings noisy; the minimum is the reproducible figure).
void TimeTasks(const DataSet& data, const std::vector<QueryTask>& tasks,
               std::vector<Figure>* figures) {
  const int rounds = absl::GetFlag(FLAGS_rounds);
  std::vector<std::vector<double>> times(tasks.size());
  for (std::size_t t = 0; t < tasks.size(); ++t) {
    times[t].assign(tasks[t].count, std::numeric_limits<double>::infinity());
  }
  for (int r = 0; r < rounds; ++r) {
    for (std::size_t t = 0; t < tasks.size(); ++t) {
      for (std::size_t q = 0; q < tasks[t].count; ++q) {
        const auto start = Clock::now();
        tasks[t].fn(data.queries.point(q));
        times[t][q] = std::min(times[t][q], MicrosSince(start));
      }
    }
  }
  for (std::size_t t = 0; t < tasks.size(); ++t) {
    figures->push_back(Summarize(data, tasks[t].index, tasks[t].op, times[t]));
  }
}

// Counts the queries on which `tree` answers differently from `expected`.
std::size_t Mismatches(const CoverTree& tree, const PointSet& queries,
                       const std::vector<std::vector<Neighbor>>& expected,
                       std::size_t k) {
  std::size_t mismatches = 0;
  std::vector<Neighbor> got;
  for (std::size_t q = 0; q < expected.size(); ++q) {
    (void)tree.Knn(queries.point(q), k, &got);
    mismatches += got != expected[q];
  }
  return mismatches;
}

// Grows an index one point at a time in data order (for the trajectory, the
// order a robot streams it); returns per-insert microseconds.
template <class Insert>
std::vector<double> TimeInserts(const PointSet& points, Insert&& insert) {
  std::vector<double> times;
  times.reserve(points.size());
  for (std::size_t i = 0; i < points.size(); ++i) {
    const auto start = Clock::now();
    insert(i);
    times.push_back(MicrosSince(start));
  }
  return times;
}

// Measures one data set; clears *exact if a cover tree answered any query
// differently from brute force.
std::vector<Figure> RunOne(const DataSet& data, std::size_t k, bool* exact) {
  const std::size_t n = data.train.size();
  const std::size_t nq = data.queries.size();
  const std::size_t dim = data.train.dim;
  const std::string& ds = data.name;
  std::vector<Figure> figures;
  std::vector<std::uint64_t> ids(n);
  for (std::size_t i = 0; i < n; ++i) ids[i] = i;

  // Brute force: the reference answers.
  BruteForceSearch brute(dim);
  for (std::size_t i = 0; i < n; ++i) brute.Add(i, data.train.point(i));
  std::vector<std::vector<Neighbor>> expected(nq);
  for (std::size_t q = 0; q < nq; ++q) {
    expected[q] = brute.Knn(data.queries.point(q), k);
  }
  // Range radius: the median k-th neighbour distance, so a range query
  // returns about k points.
  std::vector<double> kth;
  for (const auto& e : expected) kth.push_back(e.back().distance);
  std::nth_element(kth.begin(), kth.begin() + kth.size() / 2, kth.end());
  const double radius = kth[kth.size() / 2];

  // Builds and inserts, each timed on its own.
  auto start = Clock::now();
  CoverTree tree = *CoverTree::Build(dim, data.train.coordinates, ids);
  figures.push_back(Once(data, "covertree", "build", MicrosSince(start)));
  CoverTree grown(dim);
  figures.push_back(Summarize(data, "covertree", "insert",
                              TimeInserts(data.train, [&](std::size_t i) {
                                (void)grown.Insert(i, data.train.point(i));
                              })));
  // The same stream into the thread-safe index, which rebuilds in the
  // background each time the tree doubles (its insert figures include the
  // writer's share of that: copying the points).
  ConcurrentCoverTree shared(dim);
  figures.push_back(Summarize(data, "covertree-concurrent", "insert",
                              TimeInserts(data.train, [&](std::size_t i) {
                                (void)shared.Insert(i, data.train.point(i));
                              })));
  shared.WaitForBackgroundRebuild();
  NanoflannPoints all{&data.train, n};
  start = Clock::now();
  StaticKdTree kd(dim, all, nanoflann::KDTreeSingleIndexAdaptorParams(10));
  figures.push_back(
      Once(data, "nanoflann-static", "build", MicrosSince(start)));
  NanoflannPoints growing{&data.train, 0};
  DynamicKdTree dyn(dim, growing, nanoflann::KDTreeSingleIndexAdaptorParams(10),
                    n);
  figures.push_back(Summarize(data, "nanoflann-dynamic", "insert",
                              TimeInserts(data.train, [&](std::size_t i) {
                                growing.count = i + 1;
                                dyn.addPoints(i, i);
                              })));

  // Exactness of every cover tree.
  std::size_t mismatches = Mismatches(tree, data.queries, expected, k) +
                           Mismatches(grown, data.queries, expected, k);
  shared.Read([&](const CoverTree& t) {
    mismatches += Mismatches(t, data.queries, expected, k);
    return 0;
  });
  *exact = *exact && mismatches == 0;

  // Queries, interleaved.
  const std::size_t brute_nq = std::min<std::size_t>(
      nq, static_cast<std::size_t>(absl::GetFlag(FLAGS_brute_queries)));
  std::vector<Neighbor> got;
  std::vector<std::size_t> indices(k);
  std::vector<double> squared(k);
  std::vector<std::pair<std::size_t, double>> in_radius;
  const nanoflann::SearchParams sorted(32, 0.0f, true);
  const std::vector<QueryTask> tasks = {
      {"brute", "knn", brute_nq, [&](auto q) { got = brute.Knn(q, k); }},
      {"brute", "range", brute_nq,
       [&](auto q) { got = brute.Range(q, radius); }},
      {"covertree", "knn", nq, [&](auto q) { (void)tree.Knn(q, k, &got); }},
      {"covertree-uncapped", "knn", nq,
       [&](auto q) {
         KnnRules rules(k, &got);  // no radius cap from recent queries
         tree.Search(q.data(), rules);
         rules.Finish();
       }},
      {"covertree", "range", nq,
       [&](auto q) { (void)tree.Range(q, radius, &got); }},
      {"covertree-grown", "knn", nq,
       [&](auto q) { (void)grown.Knn(q, k, &got); }},
      {"covertree-concurrent", "knn", nq,
       [&](auto q) { (void)shared.Knn(q, k, &got); }},
      {"nanoflann-static", "knn", nq,
       [&](auto q) {
         kd.knnSearch(q.data(), k, indices.data(), squared.data());
       }},
      {"nanoflann-static", "range", nq,
       [&](auto q) {
         kd.radiusSearch(q.data(), radius * radius, in_radius, sorted);
       }},
      {"nanoflann-dynamic", "knn", nq,
       [&](auto q) {
         nanoflann::KNNResultSet<double, std::size_t> result(k);
         result.init(indices.data(), squared.data());
         dyn.findNeighbors(result, q.data(), nanoflann::SearchParams());
       }},
  };
  TimeTasks(data, tasks, &figures);

  std::cout << absl::StrFormat(
      "%s n=%d: cover trees answer %s brute force on %d queries; range "
      "radius %.4g; tree memory %.1f MiB\n",
      ds, n, mismatches == 0 ? "identically to" : "DIFFERENTLY FROM", nq,
      radius, tree.MemoryUsage() / 1048576.0);
  return figures;
}

void PrintTable(const std::vector<Figure>& figures) {
  std::cout << absl::StrFormat("%-11s %7s %-18s %-7s %12s %12s\n", "dataset",
                               "n", "index", "op", "median_us", "p99_us");
  for (const Figure& f : figures) {
    std::cout << absl::StrFormat("%-11s %7d %-18s %-7s %12.2f %12.2f\n",
                                 f.dataset, f.n, f.index, f.op, f.median_us,
                                 f.p99_us);
  }
}

// Ratios that the targets of bench/README.md are stated in.
void PrintRatios(const std::vector<Figure>& figures) {
  const auto find = [&](const std::string& ds, std::size_t n,
                        const std::string& index, const std::string& op) {
    for (const Figure& f : figures) {
      if (f.dataset == ds && f.n == n && f.index == index && f.op == op) {
        return f.median_us;
      }
    }
    return 0.0;
  };
  std::cout << "\nratios of medians (cover tree / other):\n";
  for (const Figure& f : figures) {
    if (f.index != "covertree" || f.op != "knn") continue;
    const double ct = f.median_us;
    std::cout << absl::StrFormat(
        "%-11s n=%-7d knn vs nanoflann-static %.2fx, vs nanoflann-dynamic "
        "%.2fx, vs brute %.3fx (speed-up %.1fx); grown/batch %.2fx; "
        "concurrent-grown/batch %.2fx; insert %.2f us\n",
        f.dataset, f.n, ct / find(f.dataset, f.n, "nanoflann-static", "knn"),
        ct / find(f.dataset, f.n, "nanoflann-dynamic", "knn"),
        ct / find(f.dataset, f.n, "brute", "knn"),
        find(f.dataset, f.n, "brute", "knn") / ct,
        find(f.dataset, f.n, "covertree-grown", "knn") / ct,
        find(f.dataset, f.n, "covertree-concurrent", "knn") / ct,
        find(f.dataset, f.n, "covertree", "insert"));
  }
}

std::string MachineName() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, model = "unknown cpu";
  int cores = 0;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      model = line.substr(line.find(':') + 2);
      ++cores;
    }
  }
  return absl::StrFormat("%s, %d cores", model, cores);
}

}  // namespace
}  // namespace streamreg

int main(int argc, char** argv) {
  const streamreg::CommandUsage usage = {
      .name = "streamreg-bench-index",
      .synopsis =
          "[--sizes N,N] [--datasets NAME,...] [--csv FILE] [--json OUT] "
          "[flags]",
      .summary =
          "The cover tree against nanoflann's k-d trees and a brute-force "
          "scan, side by side in one run: build time, k-NN and range "
          "queries, inserts and removes, on synthetic data sets or a CSV. "
          "Fails if any answer differs from brute force. Prints a table; "
          "--json writes the figures.",
      .flags = streamreg::FlagsDefinedIn({"bench/bench_index.cc"}),
      .examples =
          {"streamreg-bench-index --sizes 10000,100000 --json bench-index.json",
           "streamreg-bench-index --datasets= --csv "
           "data/sarcos/sarcos_test.csv"},
      .details = "Figures, not a test: bench/README.md has the results.",
  };
  streamreg::ParseFlagsOnly(argc, argv, usage);
  using namespace streamreg;
  const std::size_t k = absl::GetFlag(FLAGS_k);
  const std::size_t queries = absl::GetFlag(FLAGS_queries);
  std::vector<Figure> figures;
  bool exact = true;
  for (const std::string& name : std::vector<std::string>(
           absl::StrSplit(absl::GetFlag(FLAGS_datasets), ','))) {
    if (name.empty()) continue;  // --datasets= : only the --csv data set
    if (name != "trajectory" && name != "ticks" && name != "uniform") {
      std::cerr << "unknown data set: " << name << "\n";
      return 2;
    }
    for (const std::string& size : std::vector<std::string>(
             absl::StrSplit(absl::GetFlag(FLAGS_sizes), ','))) {
      const std::size_t n = std::stoul(size);
      const DataSet data = MakeDataSet(name, n, queries);
      const std::vector<Figure> one = RunOne(data, k, &exact);
      figures.insert(figures.end(), one.begin(), one.end());
    }
  }
  if (const std::string csv = absl::GetFlag(FLAGS_csv); !csv.empty()) {
    const absl::StatusOr<DataSet> data = LoadCsvDataSet(csv);
    if (!data.ok()) {
      std::cerr << data.status() << "\n";
      return 2;
    }
    const std::vector<Figure> one = RunOne(*data, k, &exact);
    figures.insert(figures.end(), one.begin(), one.end());
  }
  std::cout << "\n";
  PrintTable(figures);
  PrintRatios(figures);

  if (const std::string path = absl::GetFlag(FLAGS_json); !path.empty()) {
    nlohmann::json results = nlohmann::json::array();
    for (const Figure& f : figures) {
      results.push_back({{"dataset", f.dataset},
                         {"n", f.n},
                         {"d", f.d},
                         {"k", k},
                         {"index", f.index},
                         {"op", f.op},
                         {"median_us", f.median_us},
                         {"p99_us", f.p99_us}});
    }
    std::ofstream out(path);
    out << nlohmann::json{{"machine", MachineName()}, {"results", results}}
               .dump(2)
        << "\n";
    if (!out) {
      std::cerr << "cannot write " << path << "\n";
      return 1;
    }
  }
  if (!exact) {
    std::cerr << "cover tree answers differ from brute force\n";
    return 1;
  }
  return 0;
}
