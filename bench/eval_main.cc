// streamreg-eval: reproduces the regression experiments of Kpotufe &
// Boularias (NIPS 2012) and Trivedi et al. (UAI 2014) on a CSV data set —
// k-NN and kernel regression in the Euclidean, gradient-weights and EGOP
// metrics, learned in batch (the papers' procedure) or online (streamed
// through a Model) — over random train/test splits.
#include <cmath>
#include <fstream>
#include <iostream>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "bench/regression_methods.h"
#include "common/command_line.h"
#include "common/csv_table.h"
#include "nlohmann/json.hpp"

ABSL_FLAG(std::string, csv, "", "The data set (data/README.md convention)");
ABSL_FLAG(std::string, test_csv, "",
          "Draw the test rows from this file instead (same columns)");
ABSL_FLAG(std::string, target, "", "The target column (name or target_name)");
ABSL_FLAG(std::vector<std::string>, drop, {}, "Input columns to leave out");
ABSL_FLAG(int, train, 0, "Training rows per repetition");
ABSL_FLAG(int, test, 0, "Test rows per repetition");
ABSL_FLAG(int, reps, 10, "Repetitions (random splits)");
ABSL_FLAG(std::uint64_t, seed, 1, "Seed of the splits (and online models)");
ABSL_FLAG(std::vector<std::string>, methods,
          std::vector<std::string>({"knn", "knn-gw", "knn-egop", "kr", "kr-gw",
                                    "kr-egop"}),
          "Methods to run: knn, knn-gw, knn-egop, kr, kr-gw, kr-egop, "
          "knn-mlkr, kr-mlkr, knn-glml, kr-glml");
ABSL_FLAG(std::string, mode, "batch", "batch or online");
ABSL_FLAG(std::string, json, "", "Write the results as JSON to this file");

namespace streamreg {
namespace {

struct Source {
  const CsvTable* table;
  std::vector<std::size_t> inputs;
  std::size_t target;
};

// Appends rows `rows` of `source` to x / y.
void Take(const Source& source, const std::vector<std::size_t>& rows,
          std::vector<double>* x, std::vector<double>* y) {
  for (std::size_t row : rows) {
    for (std::size_t c : source.inputs)
      x->push_back(source.table->value(row, c));
    y->push_back(source.table->value(row, source.target));
  }
}

std::vector<std::size_t> Shuffled(std::size_t n, std::mt19937_64& random) {
  std::vector<std::size_t> rows(n);
  std::iota(rows.begin(), rows.end(), std::size_t{0});
  // Fisher–Yates with a portable draw.
  for (std::size_t i = n; i > 1; --i) {
    const std::size_t j = random() % i;
    std::swap(rows[i - 1], rows[j]);
  }
  return rows;
}

absl::StatusOr<Source> MakeSource(const CsvTable& table,
                                  const std::vector<std::string>& drop,
                                  const std::string& target) {
  absl::StatusOr<std::size_t> column = table.Find(target);
  if (!column.ok()) return column.status();
  absl::StatusOr<std::vector<std::size_t>> inputs = table.InputColumns(drop);
  if (!inputs.ok()) return inputs.status();
  std::erase(*inputs, *column);
  if (inputs->empty()) {
    return absl::InvalidArgumentError(table.path() + ": no input columns");
  }
  return Source{&table, *std::move(inputs), *column};
}

struct Summary {
  std::vector<double> nmse, predict_us, fit_seconds, learn_us;
};

double MeanOf(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0) / v.size();
}

double SdOf(const std::vector<double>& v) {
  if (v.size() < 2) return 0.0;
  const double mean = MeanOf(v);
  double sum = 0.0;
  for (double x : v) sum += (x - mean) * (x - mean);
  return std::sqrt(sum / (v.size() - 1));
}

int Fail(const absl::Status& status) {
  std::cerr << "streamreg-eval: " << status.message() << "\n";
  return 2;
}

int Main() {
  const std::string csv = absl::GetFlag(FLAGS_csv);
  const std::string target = absl::GetFlag(FLAGS_target);
  const std::size_t train = absl::GetFlag(FLAGS_train);
  const std::size_t test = absl::GetFlag(FLAGS_test);
  const std::string mode = absl::GetFlag(FLAGS_mode);
  if (csv.empty() || target.empty() || train == 0 || test == 0) {
    return Fail(absl::InvalidArgumentError(
        "--csv, --target, --train and --test are required"));
  }
  if (mode != "batch" && mode != "online") {
    return Fail(absl::InvalidArgumentError("--mode: batch or online"));
  }
  std::vector<RegressionMethod> methods;
  for (const std::string& name : absl::GetFlag(FLAGS_methods)) {
    absl::StatusOr<RegressionMethod> method = ParseRegressionMethod(name);
    if (!method.ok()) return Fail(method.status());
    methods.push_back(*method);
  }
  absl::StatusOr<CsvTable> table = CsvTable::Read(csv);
  if (!table.ok()) return Fail(table.status());
  absl::StatusOr<Source> source =
      MakeSource(*table, absl::GetFlag(FLAGS_drop), target);
  if (!source.ok()) return Fail(source.status());
  absl::StatusOr<CsvTable> test_table;
  Source test_source = *source;
  if (const std::string path = absl::GetFlag(FLAGS_test_csv); !path.empty()) {
    test_table = CsvTable::Read(path);
    if (!test_table.ok()) return Fail(test_table.status());
    if (test_table->columns() != table->columns()) {
      return Fail(absl::InvalidArgumentError(
          "--test_csv: columns differ from --csv's"));
    }
    test_source.table = &*test_table;
    if (test_table->num_rows() < test || table->num_rows() < train) {
      return Fail(
          absl::InvalidArgumentError("too few rows for --train/--test"));
    }
  } else if (table->num_rows() < train + test) {
    return Fail(absl::InvalidArgumentError(
        absl::StrFormat("%s has %d rows; --train + --test = %d", csv,
                        table->num_rows(), train + test)));
  }

  const int reps = absl::GetFlag(FLAGS_reps);
  const std::uint64_t seed = absl::GetFlag(FLAGS_seed);
  std::vector<Summary> summaries(methods.size());
  for (int rep = 0; rep < reps; ++rep) {
    std::mt19937_64 random(seed * 1000003 + rep);
    RegressionSplit split;
    split.dim = source->inputs.size();
    const std::vector<std::size_t> rows = Shuffled(table->num_rows(), random);
    Take(*source, {rows.begin(), rows.begin() + train}, &split.train_x,
         &split.train_y);
    if (test_table.ok()) {
      const std::vector<std::size_t> test_rows =
          Shuffled(test_table->num_rows(), random);
      Take(test_source, {test_rows.begin(), test_rows.begin() + test},
           &split.test_x, &split.test_y);
    } else {
      Take(*source, {rows.begin() + train, rows.begin() + train + test},
           &split.test_x, &split.test_y);
    }
    for (std::size_t m = 0; m < methods.size(); ++m) {
      const MethodOutcome outcome =
          mode == "batch" ? RunBatch(split, methods[m])
                          : RunOnline(split, methods[m], seed + rep);
      summaries[m].nmse.push_back(outcome.nmse);
      summaries[m].predict_us.push_back(outcome.predict_us);
      summaries[m].fit_seconds.push_back(outcome.fit_seconds);
      summaries[m].learn_us.push_back(outcome.learn_us);
      std::cerr << absl::StrFormat(
          "rep %d %-9s nmse %.4f  h %.3g k %d  gradient h %.3g t %.3g\n", rep,
          RegressionMethodName(methods[m]), outcome.nmse, outcome.bandwidth,
          outcome.k, outcome.gradient_bandwidth, outcome.gradient_step);
    }
  }

  nlohmann::json results = nlohmann::json::object();
  std::cout << absl::StrFormat(
      "%s  target %s  mode %s  train %d  test %d  "
      "reps %d\n",
      csv, target, mode, train, test, reps);
  std::cout << absl::StrFormat("%-10s %18s %12s %12s %12s\n", "method",
                               "nMSE (mean ± sd)", "predict µs", "fit s",
                               "learn µs");
  for (std::size_t m = 0; m < methods.size(); ++m) {
    const Summary& s = summaries[m];
    const std::string name = RegressionMethodName(methods[m]);
    std::cout << absl::StrFormat("%-10s %9.4f ± %.4f %12.1f %12.3f %12.1f\n",
                                 name, MeanOf(s.nmse), SdOf(s.nmse),
                                 MeanOf(s.predict_us), MeanOf(s.fit_seconds),
                                 MeanOf(s.learn_us));
    results[name] = {{"nmse_mean", MeanOf(s.nmse)},
                     {"nmse_sd", SdOf(s.nmse)},
                     {"predict_us_mean", MeanOf(s.predict_us)},
                     {"fit_seconds", MeanOf(s.fit_seconds)},
                     {"learn_us", MeanOf(s.learn_us)}};
  }
  if (const std::string path = absl::GetFlag(FLAGS_json); !path.empty()) {
    const nlohmann::json out = {{"csv", csv},        {"target", target},
                                {"mode", mode},      {"train", train},
                                {"test", test},      {"reps", reps},
                                {"results", results}};
    std::ofstream(path) << out.dump(2) << "\n";
  }
  return 0;
}

}  // namespace
}  // namespace streamreg

int main(int argc, char** argv) {
  const streamreg::CommandUsage usage = {
      .name = "streamreg-eval",
      .synopsis = "--csv FILE --target COLUMN --train N --test M [flags]",
      .summary =
          "Reproduces the regression experiments of Kpotufe & Boularias "
          "(NIPS 2012) and Trivedi et al. (UAI 2014) on a CSV data set "
          "(data/README.md convention): k-NN and kernel regression in the "
          "Euclidean, gradient-weights and EGOP metrics, learned in batch "
          "(the papers' procedure) or online, over --reps random "
          "train/test splits; prints nMSE mean and sd per method.",
      .flags = streamreg::FlagsDefinedIn({"bench/eval_main.cc"}),
      .examples = {"streamreg-eval --csv data/boston/boston.csv --target MEDV "
                   "--train 306 --test 200 --reps 10 --mode batch"},
      .details =
          "bench/reproduce_papers.sh runs it on every data set of "
          "bench/RESULTS.md.",
  };
  streamreg::ParseFlagsOnly(argc, argv, usage);
  return streamreg::Main();
}
