// The streamreg CLI's commands, called with options (as the program does
// after reading its flags) against an in-process server: what each prints,
// what it changes on the server, and the errors that change nothing.
#include "client/cli/cli_commands.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "client/cli/bench_commands.h"
#include "client/lib/client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/rpc/server.h"
#include "tests/support/fresh_directory.h"
#include "tests/support/service_test_support.h"
#include "tests/support/test_server.h"

namespace streamreg {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// What a command returned and printed.
struct CommandRun {
  absl::Status status;
  std::string output;
};

class CliCommandsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = FreshDirectory();
    ASSERT_NO_FATAL_FAILURE(
        StartTestServer(ServerOptions{}, directory_ + "/data", &server_));
    client_ = std::make_unique<Client>(TestClientOptions(*server_));
    csv_ = directory_ + "/rows.csv";
    WriteCsv(csv_, rows_, rows_.size());
  }
  void TearDown() override {
    client_.reset();
    server_.reset();
    std::filesystem::remove_all(directory_);
  }

  // A new, empty server started with `options`.
  void RestartServer(ServerOptions options) {
    client_.reset();
    server_.reset();
    ASSERT_NO_FATAL_FAILURE(StartTestServer(
        std::move(options), directory_ + "/restarted", &server_));
    client_ = std::make_unique<Client>(TestClientOptions(*server_));
  }

  // The data convention: inputs x0..x2, then target_wave, target_square.
  static void WriteCsv(const std::string& path, const Rows& rows,
                       std::size_t n) {
    std::ofstream out(path);
    out << "x0,x1,x2,target_wave,target_square\n";
    out.precision(17);
    for (std::size_t i = 0; i < n; ++i) {
      out << rows.input(i)[0] << "," << rows.input(i)[1] << ","
          << rows.input(i)[2] << "," << rows.target(i)[0] << ","
          << rows.target(i)[1] << "\n";
    }
  }

  // The lines of streamreg predict's CSV for `options` (none if it failed).
  std::vector<std::string> PredictedLines(const CliOptions& options) {
    const CommandRun run = Run(PredictCommand, options);
    EXPECT_TRUE(run.status.ok()) << run.status;
    return absl::StrSplit(run.output, '\n', absl::SkipEmpty());
  }

  CommandRun Run(CommandFunction command, const CliOptions& options) {
    std::FILE* out = std::tmpfile();
    CommandRun run;
    run.status = command(*client_, options, out);
    std::fflush(out);
    std::rewind(out);
    char buffer[4096];
    std::size_t read = 0;
    while ((read = std::fread(buffer, 1, sizeof buffer, out)) > 0) {
      run.output.append(buffer, read);
    }
    std::fclose(out);
    return run;
  }

  CliOptions ModelOptions(const std::string& model) const {
    CliOptions options;
    options.model = model;
    options.csv = csv_;
    return options;
  }

  std::size_t ModelSamples(const std::string& model) {
    absl::StatusOr<v1::Model> found = client_->GetModel(model);
    EXPECT_TRUE(found.ok()) << found.status();
    return found.ok() ? found->stats().num_samples() : 0;
  }

  std::string directory_;
  std::unique_ptr<Server> server_;
  std::unique_ptr<Client> client_;
  Rows rows_{400, 5};
  std::string csv_;
};

TEST_F(CliCommandsTest, CreateTakesInputsAndTargetsFromTheCsvHeader) {
  CliOptions options = ModelOptions("arm");
  options.spec.metric = "egop";
  options.spec.regressor = "knn";
  options.spec.capacity = "window:300";
  const CommandRun run = Run(CreateCommand, options);
  ASSERT_TRUE(run.status.ok()) << run.status;
  EXPECT_EQ(run.output,
            "created arm: 3 inputs, 2 targets, metric egop, regressor knn\n");
  absl::StatusOr<v1::Model> model = client_->GetModel("arm");
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->spec().input_dim(), 3u);
  EXPECT_THAT(model->spec().input_names(),
              ::testing::ElementsAre("x0", "x1", "x2"));
  EXPECT_THAT(model->spec().target_names(),
              ::testing::ElementsAre("wave", "square"));
  EXPECT_EQ(model->spec().capacity().policy(), v1::CAPACITY_POLICY_WINDOW);
  EXPECT_EQ(model->spec().capacity().limit(), 300u);
}

TEST_F(CliCommandsTest, CreateReplacesAnEarlierModelOnlyWhenAsked) {
  CliOptions options = ModelOptions("arm");
  options.replace = true;  // none yet: nothing to delete
  CommandRun run = Run(CreateCommand, options);
  ASSERT_TRUE(run.status.ok()) << run.status;
  EXPECT_EQ(run.output,
            "created arm: 3 inputs, 2 targets, metric mlkr, regressor knn\n");
  ASSERT_TRUE(Run(IngestCommand, ModelOptions("arm")).status.ok());
  ASSERT_EQ(ModelSamples("arm"), 400u);
  // Again without --replace: refused, the model and its samples kept.
  run = Run(CreateCommand, ModelOptions("arm"));
  EXPECT_EQ(run.status.code(), absl::StatusCode::kAlreadyExists) << run.status;
  EXPECT_EQ(ModelSamples("arm"), 400u);
  // With it: a fresh model, as a rerun of the README's walkthrough wants.
  run = Run(CreateCommand, options);
  ASSERT_TRUE(run.status.ok()) << run.status;
  EXPECT_EQ(run.output,
            "deleted the earlier model arm\n"
            "created arm: 3 inputs, 2 targets, metric mlkr, regressor knn\n");
  EXPECT_EQ(ModelSamples("arm"), 0u);
}

TEST_F(CliCommandsTest, CreateFromCountsWithoutACsv) {
  CliOptions options;
  options.model = "bare";
  options.spec.inputs = 5;
  options.spec.targets = "2";
  ASSERT_TRUE(Run(CreateCommand, options).status.ok());
  absl::StatusOr<v1::Model> model = client_->GetModel("bare");
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->spec().input_dim(), 5u);
  EXPECT_THAT(model->spec().target_names(), ::testing::ElementsAre("y0", "y1"));
  EXPECT_EQ(model->spec().metric(), v1::METRIC_MLKR);  // the default
}

TEST_F(CliCommandsTest, BadOptionsNameTheFlagAndCreateNothing) {
  struct Case {
    std::string model;
    std::string metric = "gw", kernel = "box", capacity = "unbounded";
    std::string error;
  };
  const std::vector<Case> cases = {
      {.model = "", .error = "--model NAME is required"},
      {.model = "m", .metric = "cosine", .error = "--metric: unknown value"},
      {.model = "m", .kernel = "flat", .error = "--kernel: unknown value"},
      {.model = "m", .capacity = "window:x", .error = "--capacity: 'window:x'"},
  };
  for (const Case& c : cases) {
    CliOptions options = ModelOptions(c.model);
    options.spec.metric = c.metric;
    options.spec.kernel = c.kernel;
    options.spec.capacity = c.capacity;
    const CommandRun run = Run(CreateCommand, options);
    EXPECT_EQ(run.status.code(), absl::StatusCode::kInvalidArgument) << c.error;
    EXPECT_THAT(run.status.message(), HasSubstr(c.error));
    EXPECT_EQ(run.output, "");
  }
  absl::StatusOr<std::vector<v1::Model>> models = client_->ListModels();
  ASSERT_TRUE(models.ok());
  EXPECT_TRUE(models->empty());
}

TEST_F(CliCommandsTest, IngestLearnsTheFirstLimitRowsAndCreatesOnRequest) {
  CliOptions options = ModelOptions("arm");
  options.limit = 150;
  const CommandRun missing = Run(IngestCommand, options);
  EXPECT_EQ(missing.status.code(), absl::StatusCode::kNotFound);
  options.create = true;
  const CommandRun run = Run(IngestCommand, options);
  ASSERT_TRUE(run.status.ok()) << run.status;
  EXPECT_THAT(run.output, StartsWith("ingested 150 samples into arm"));
  EXPECT_THAT(run.output, HasSubstr("the model has 150 samples"));
  EXPECT_EQ(ModelSamples("arm"), 150u);
}

// Rows of the fixture's CSV with its five columns (x0, x1, x2, wave,
// square: 0..4) in the order `source`, under the names `header`.
void WriteColumns(const std::string& path, const Rows& rows,
                  const std::vector<std::string>& header,
                  const std::vector<int>& source) {
  std::ofstream out(path);
  out << absl::StrJoin(header, ",") << "\n";
  out.precision(17);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const double values[] = {rows.input(i)[0], rows.input(i)[1],
                             rows.input(i)[2], rows.target(i)[0],
                             rows.target(i)[1]};
    for (std::size_t c = 0; c < source.size(); ++c) {
      out << (c == 0 ? "" : ",") << values[source[c]];
    }
    out << "\n";
  }
}

TEST_F(CliCommandsTest, ColumnsAreMatchedByNameAndAMismatchChangesNothing) {
  CliOptions options = ModelOptions("arm");
  options.create = true;
  options.limit = 100;
  ASSERT_TRUE(Run(IngestCommand, options).status.ok());
  // The same rows with the columns in another order learn the same
  // samples: model "shuffled" predicts what "arm" predicts.
  const std::string shuffled_csv = directory_ + "/shuffled.csv";
  WriteColumns(shuffled_csv, rows_,
               {"target_square", "x2", "x0", "target_wave", "x1"},
               {4, 2, 0, 3, 1});
  CliOptions create = ModelOptions("shuffled");
  ASSERT_TRUE(Run(CreateCommand, create).status.ok());  // from rows.csv
  CliOptions shuffled = ModelOptions("shuffled");
  shuffled.csv = shuffled_csv;
  shuffled.limit = 100;
  ASSERT_TRUE(Run(IngestCommand, shuffled).status.ok());
  for (const char* model : {"arm", "shuffled"}) {
    SCOPED_TRACE(model);
    CliOptions predict = ModelOptions(model);
    predict.csv = shuffled_csv;  // by name, in any order
    const CommandRun by_name = Run(PredictCommand, predict);
    ASSERT_TRUE(by_name.status.ok()) << by_name.status;
    predict.csv = csv_;
    EXPECT_EQ(Run(PredictCommand, predict).output, by_name.output);
  }
  // A renamed input or target column is refused by ingest, replay and
  // predict, naming what is missing and what was not expected; nothing is
  // learned.
  struct Case {
    std::vector<std::string> header;
    std::string error;
  };
  const std::vector<Case> cases = {
      {{"joint0", "x1", "x2", "target_wave", "target_square"},
       "missing x0; unexpected joint0"},
      {{"x0", "x1", "x2", "target_wave", "target_sq"},
       "missing square; unexpected target_sq"},
      {{"x0", "x1", "x2", "extra", "target_wave"},
       "missing square; unexpected extra"},
  };
  const std::string renamed_csv = directory_ + "/renamed.csv";
  for (const Case& c : cases) {
    SCOPED_TRACE(c.error);
    WriteColumns(renamed_csv, rows_, c.header, {0, 1, 2, 3, 4});
    CliOptions renamed = ModelOptions("arm");
    renamed.csv = renamed_csv;
    renamed.limit = 20;
    for (CommandFunction command : {IngestCommand, ReplayCommand}) {
      const CommandRun run = Run(command, renamed);
      EXPECT_EQ(run.status.code(), absl::StatusCode::kInvalidArgument);
      EXPECT_THAT(run.status.message(), HasSubstr(c.error));
      EXPECT_THAT(run.status.message(), HasSubstr("--by_position"));
      // The file named by the path it was given.
      EXPECT_THAT(std::string(run.status.message()),
                  StartsWith(renamed_csv + ": its columns are not"));
    }
    EXPECT_EQ(ModelSamples("arm"), 100u);
  }
  // Predict needs no targets, but the inputs by name.
  WriteColumns(renamed_csv, rows_, {"joint0", "x1", "x2"}, {0, 1, 2});
  CliOptions predict = ModelOptions("arm");
  predict.csv = renamed_csv;
  const CommandRun refused = Run(PredictCommand, predict);
  EXPECT_EQ(refused.status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status.message(), HasSubstr("missing x0; unexpected "
                                                  "joint0"));
  // --by_position takes the columns in their order, whatever their names.
  WriteColumns(renamed_csv, rows_,
               {"joint0", "x1", "x2", "target_wave", "target_sq"},
               {0, 1, 2, 3, 4});
  CliOptions by_position = ModelOptions("arm");
  by_position.csv = renamed_csv;
  by_position.limit = 20;
  by_position.by_position = true;
  const CommandRun taken = Run(IngestCommand, by_position);
  ASSERT_TRUE(taken.status.ok()) << taken.status;
  EXPECT_EQ(ModelSamples("arm"), 120u);
}

TEST_F(CliCommandsTest, PredictWritesWhatThePredictRpcAnswers) {
  CliOptions options = ModelOptions("arm");
  options.create = true;
  options.limit = 300;
  ASSERT_TRUE(Run(IngestCommand, options).status.ok());
  // The held-out rows 300..399 in their own file.
  Rows held_out = rows_;
  held_out.x.erase(held_out.x.begin(), held_out.x.begin() + 300 * Rows::kDim);
  held_out.y.erase(held_out.y.begin(),
                   held_out.y.begin() + 300 * Rows::kTargets);
  const std::string test_csv = directory_ + "/test.csv";
  WriteCsv(test_csv, held_out, held_out.size());
  options.csv = test_csv;
  options.limit = 0;
  const CommandRun run = Run(PredictCommand, options);
  ASSERT_TRUE(run.status.ok()) << run.status;
  absl::StatusOr<std::vector<v1::Prediction>> expected =
      client_->Predict("arm", held_out.x, Rows::kDim);
  ASSERT_TRUE(expected.ok()) << expected.status();
  const std::vector<std::string> lines =
      absl::StrSplit(run.output, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 1 + held_out.size());
  // The truth (the file has it), then what was predicted, each named for
  // what it is.
  EXPECT_EQ(lines[0],
            "wave,square,predicted_wave,predicted_square,lower_wave,"
            "lower_square,upper_wave,upper_square,spread_wave,spread_square,"
            "neighbors");
  for (std::size_t row = 0; row < held_out.size(); ++row) {
    const std::vector<std::string> fields = absl::StrSplit(lines[row + 1], ',');
    ASSERT_EQ(fields.size(), 11u);
    const v1::Prediction& p = (*expected)[row];
    for (int t = 0; t < 2; ++t) {
      EXPECT_EQ(std::stod(fields[t]), held_out.target(row)[t]) << "row " << row;
      EXPECT_EQ(std::stod(fields[2 + t]), p.y(t)) << "row " << row;
      EXPECT_EQ(std::stod(fields[4 + t]), p.lower(t)) << "row " << row;
      EXPECT_EQ(std::stod(fields[6 + t]), p.upper(t)) << "row " << row;
      EXPECT_EQ(std::stod(fields[8 + t]), p.spread(t)) << "row " << row;
    }
    EXPECT_EQ(std::stoul(fields[10]), p.neighbors());
  }
  // --legacy_columns: the names of earlier builds, the same predictions.
  options.legacy_columns = true;
  const std::vector<std::string> legacy_lines = PredictedLines(options);
  ASSERT_EQ(legacy_lines.size(), 1 + held_out.size());
  EXPECT_EQ(legacy_lines[0],
            "target_wave,target_square,spread_wave,spread_square,lower_wave,"
            "lower_square,upper_wave,upper_square,neighbors");
  const std::vector<std::string> legacy_first =
      absl::StrSplit(legacy_lines[1], ',');
  ASSERT_EQ(legacy_first.size(), 9u);
  EXPECT_EQ(std::stod(legacy_first[0]), (*expected)[0].y(0));
  EXPECT_EQ(std::stod(legacy_first[2]), (*expected)[0].spread(0));
  EXPECT_EQ(std::stod(legacy_first[4]), (*expected)[0].lower(0));
  options.legacy_columns = false;
  // A file of inputs alone: no truth to write.
  const std::string inputs_csv = directory_ + "/inputs.csv";
  {
    std::ofstream inputs(inputs_csv);
    inputs << "x0,x1,x2\n";
    for (std::size_t row = 0; row < 3; ++row) {
      const std::span<const double> x = held_out.input(row);
      inputs << absl::StrFormat("%.17g,%.17g,%.17g\n", x[0], x[1], x[2]);
    }
  }
  CliOptions inputs_only = options;
  inputs_only.csv = inputs_csv;
  const std::vector<std::string> bare = PredictedLines(inputs_only);
  ASSERT_EQ(bare.size(), 4u);
  EXPECT_EQ(bare[0],
            "predicted_wave,predicted_square,lower_wave,lower_square,"
            "upper_wave,upper_square,spread_wave,spread_square,neighbors");
  EXPECT_EQ(
      std::stod(std::vector<std::string>(absl::StrSplit(bare[1], ','))[0]),
      (*expected)[0].y(0));
  // --out writes the same lines to a file and nothing to the output.
  options.out = directory_ + "/predictions.csv";
  const CommandRun to_file = Run(PredictCommand, options);
  ASSERT_TRUE(to_file.status.ok()) << to_file.status;
  EXPECT_EQ(to_file.output, "");
  std::ifstream file(options.out);
  std::stringstream written;
  written << file.rdbuf();
  EXPECT_EQ(written.str(), run.output);
  // --interval_level: the intervals at that level instead of the model's.
  options.out = "-";
  options.spec.interval_level = 0.5;
  const CommandRun narrow = Run(PredictCommand, options);
  ASSERT_TRUE(narrow.status.ok()) << narrow.status;
  absl::StatusOr<std::vector<v1::Prediction>> at_half =
      client_->Predict("arm", held_out.x, Rows::kDim,
                       {.interval_level = 0.5, .with_neighbors = false});
  ASSERT_TRUE(at_half.ok()) << at_half.status();
  const std::vector<std::string> first = absl::StrSplit(
      std::vector<std::string>(absl::StrSplit(narrow.output, '\n'))[1], ',');
  EXPECT_EQ(std::stod(first[4]), (*at_half)[0].lower(0));
  EXPECT_GT(std::stod(first[4]), (*expected)[0].lower(0));
  options.spec.interval_level = 2;
  EXPECT_THAT(Run(PredictCommand, options).status.message(),
              HasSubstr("interval_level: must be in (0, 1), got 2"));
}

TEST_F(CliCommandsTest, PredictWritesTheSamplesEachPredictionUsed) {
  CliOptions options = ModelOptions("arm");
  options.create = true;
  options.limit = 300;
  ASSERT_TRUE(Run(IngestCommand, options).status.ok());
  options.limit = 20;
  options.neighbors_out = directory_ + "/neighbors.csv";
  const CommandRun run = Run(PredictCommand, options);
  ASSERT_TRUE(run.status.ok()) << run.status;
  absl::StatusOr<std::vector<v1::Prediction>> expected = client_->Predict(
      "arm", rows_.inputs(0, 20), Rows::kDim,
      {.interval_level = std::nullopt, .with_neighbors = true});
  ASSERT_TRUE(expected.ok()) << expected.status();
  std::ifstream file(options.neighbors_out);
  std::string line;
  ASSERT_TRUE(std::getline(file, line));
  EXPECT_EQ(line, "row,target,rank,sample_id,distance,y,x0,x1,x2");
  const char* names[] = {"wave", "square"};
  std::size_t listed = 0;
  for (std::size_t row = 0; row < 20; ++row) {
    const v1::Prediction& p = (*expected)[row];
    ASSERT_EQ(p.used_size(), 2);
    for (int t = 0; t < 2; ++t) {
      ASSERT_GT(p.used(t).neighbors_size(), 0);
      for (int rank = 0; rank < p.used(t).neighbors_size(); ++rank) {
        const v1::UsedNeighbor& neighbor = p.used(t).neighbors(rank);
        ASSERT_TRUE(std::getline(file, line)) << "row " << row;
        const std::vector<std::string> fields = absl::StrSplit(line, ',');
        ASSERT_EQ(fields.size(), 9u) << line;
        EXPECT_EQ(fields[0], absl::StrCat(row));
        EXPECT_EQ(fields[1], names[t]);
        EXPECT_EQ(fields[2], absl::StrCat(rank));
        EXPECT_EQ(std::stoull(fields[3]), neighbor.sample_id());
        EXPECT_EQ(std::stod(fields[4]), neighbor.distance());
        EXPECT_EQ(std::stod(fields[5]), neighbor.y());
        for (int i = 0; i < 3; ++i) {
          EXPECT_EQ(std::stod(fields[6 + i]), neighbor.x(i));
        }
        ++listed;
      }
    }
  }
  EXPECT_FALSE(std::getline(file, line)) << "more rows than neighbours";
  EXPECT_GT(listed, 40u);
  // The rows in the file are the queries themselves (learned): each is its
  // own nearest neighbour, at distance 0.
  EXPECT_EQ((*expected)[0].used(0).neighbors(0).distance(), 0.0);
  EXPECT_EQ((*expected)[0].used(0).neighbors(0).x(0), rows_.input(0)[0]);
  // Without the flag, the server is not asked for them.
  absl::StatusOr<std::vector<v1::Prediction>> plain =
      client_->Predict("arm", rows_.inputs(0, 1), Rows::kDim);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ((*plain)[0].used_size(), 0);
  options.neighbors_out = directory_ + "/no/such/folder/neighbors.csv";
  EXPECT_THAT(Run(PredictCommand, options).status.message(),
              HasSubstr("--neighbors_out"));
}

TEST_F(CliCommandsTest, CreateSetsTheIntervalsCalibration) {
  CliOptions options = ModelOptions("calibrated");
  options.create = true;
  options.limit = 50;
  options.spec.interval_window = 500;
  options.spec.interval_step = 0;  // split conformal
  ASSERT_TRUE(Run(IngestCommand, options).status.ok());
  const absl::StatusOr<v1::Model> model = client_->GetModel("calibrated");
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->spec().tuning().interval_window(), 500u);
  EXPECT_EQ(model->spec().tuning().interval_step(), 0.0);
  // Out of range: the server's error, naming the field; no model.
  options.model = "refused";
  options.spec.interval_step = 1.5;
  EXPECT_THAT(Run(IngestCommand, options).status.message(),
              HasSubstr("spec.tuning.interval_step: must be in [0, 1)"));
  EXPECT_EQ(client_->GetModel("refused").status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(CliCommandsTest, CreateSetsTheLinearBasesRidges) {
  CliOptions options = ModelOptions("ridged");
  options.create = true;
  options.limit = 50;
  options.spec.base_ridge = 4;
  options.spec.base_relative_ridge = 0.2;
  options.spec.base_forgetting = 0.999;
  ASSERT_TRUE(Run(IngestCommand, options).status.ok());
  const absl::StatusOr<v1::Model> model = client_->GetModel("ridged");
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->spec().tuning().base_ridge(), 4.0);
  EXPECT_EQ(model->spec().tuning().base_relative_ridge(), 0.2);
  EXPECT_EQ(model->spec().tuning().base_forgetting(), 0.999);
  // Unset (< 0): the server's defaults.
  options.model = "plain";
  options.spec = ModelOptions("plain").spec;
  ASSERT_TRUE(Run(IngestCommand, options).status.ok());
  const absl::StatusOr<v1::Model> plain = client_->GetModel("plain");
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->spec().tuning().base_ridge(), 1.0);
  EXPECT_EQ(plain->spec().tuning().base_relative_ridge(), 0.03);
  EXPECT_EQ(plain->spec().tuning().base_forgetting(), 1.0);
}

TEST_F(CliCommandsTest, TuningSetsAnySettingByItsNameInTheProto) {
  CliOptions options = ModelOptions("tuned");
  options.create = true;
  options.limit = 50;
  options.spec.tuning = {"honest_lag=50", "step_ratio=0.25",
                         "gradient_estimator=finite_differences",
                         "max_scoring_stride=2", "interval_difficulty=true"};
  ASSERT_TRUE(Run(IngestCommand, options).status.ok());
  const absl::StatusOr<v1::Model> model = client_->GetModel("tuned");
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->spec().tuning().honest_lag(), 50u);
  EXPECT_EQ(model->spec().tuning().step_ratio(), 0.25);
  EXPECT_EQ(model->spec().tuning().gradient_estimator(),
            v1::GRADIENT_ESTIMATOR_FINITE_DIFFERENCES);
  EXPECT_EQ(model->spec().tuning().max_scoring_stride(), 2u);
  EXPECT_TRUE(model->spec().tuning().interval_difficulty());
  // Mistakes name the setting; nothing is made.
  options.model = "mistuned";
  const std::pair<std::vector<std::string>, std::string> mistakes[] = {
      {{"honest_lags=5"}, "--tuning: no setting 'honest_lags' (the settings: "},
      {{"honest_lag"}, "--tuning: 'honest_lag' is not name=value"},
      {{"step_ratio=fast"}, "--tuning: step_ratio='fast' is not a number"},
      {{"honest_lag=-1"}, "--tuning: honest_lag='-1' is not a count"},
      {{"interval_difficulty=maybe"},
       "--tuning: interval_difficulty='maybe' is not true or false"},
      {{"gradient_estimator=slopes"},
       "--tuning: gradient_estimator='slopes' is not one of "
       "GradientEstimator's values"},
      // The server's bounds, named on the wire.
      {{"max_scoring_stride=0"},
       "spec.tuning.max_scoring_stride: 1 to 1024, got 0"}};
  for (const auto& [tuning, error] : mistakes) {
    options.spec.tuning = tuning;
    EXPECT_THAT(std::string(Run(IngestCommand, options).status.message()),
                HasSubstr(error));
  }
  EXPECT_EQ(client_->GetModel("mistuned").status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(CliCommandsTest, ListInfoMetricRefitAndDeleteReportTheModel) {
  CliOptions options = ModelOptions("arm");
  options.create = true;
  ASSERT_TRUE(Run(IngestCommand, options).status.ok());

  const CommandRun list = Run(ListCommand, options);
  ASSERT_TRUE(list.status.ok());
  EXPECT_THAT(list.output, StartsWith("NAME"));
  EXPECT_THAT(list.output, HasSubstr("\narm "));
  EXPECT_THAT(list.output, HasSubstr(" 400 "));

  options.json = "-";
  const CommandRun info = Run(InfoCommand, options);
  ASSERT_TRUE(info.status.ok());
  const nlohmann::json parsed = nlohmann::json::parse(info.output);
  EXPECT_EQ(parsed["name"], "arm");
  EXPECT_EQ(parsed["stats"]["num_samples"], "400");

  options.json.clear();
  const CommandRun metric = Run(MetricCommand, options);
  ASSERT_TRUE(metric.status.ok());
  EXPECT_THAT(metric.output, StartsWith("mlkr metric of arm (maps of rank 3)"));
  for (const char* input : {"x0", "x1", "x2"}) {
    EXPECT_THAT(metric.output, HasSubstr(input));
  }

  const CommandRun refit = Run(RefitCommand, options);
  ASSERT_TRUE(refit.status.ok()) << refit.status;
  EXPECT_THAT(refit.output, StartsWith("refitted arm: 400 samples"));

  const CommandRun deleted = Run(DeleteCommand, options);
  ASSERT_TRUE(deleted.status.ok());
  EXPECT_EQ(deleted.output, "deleted arm\n");
  EXPECT_EQ(client_->GetModel("arm").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(Run(InfoCommand, options).status.code(),
            absl::StatusCode::kNotFound);
}

TEST_F(CliCommandsTest, AnMlkrModelShowsItsInputWeightsAndSpectrum) {
  CliOptions options = ModelOptions("mapped");
  options.create = true;
  options.spec.metric = "mlkr";
  options.spec.mlkr_rank = 2;
  ASSERT_TRUE(Run(IngestCommand, options).status.ok());
  absl::StatusOr<v1::Model> model = client_->GetModel("mapped");
  ASSERT_TRUE(model.ok());
  EXPECT_EQ(model->spec().metric(), v1::METRIC_MLKR);
  EXPECT_EQ(model->spec().tuning().mlkr_rank(), 2u);
  // Unset, the intervals' calibration is the server's.
  EXPECT_EQ(model->spec().tuning().interval_window(), 2000u);
  EXPECT_EQ(model->spec().tuning().interval_step(), 0.005);
  const CommandRun metric = Run(MetricCommand, options);
  ASSERT_TRUE(metric.status.ok()) << metric.status;
  EXPECT_THAT(metric.output,
              StartsWith("mlkr metric of mapped (maps of rank 2)\n"));
  EXPECT_THAT(
      metric.output,
      HasSubstr("all targets — MLKR input weights (diagonal of A^T A)"));
  EXPECT_THAT(metric.output,
              HasSubstr("MLKR spectrum (squared singular values of A)"));
  options.spec.metric = "manhattan";
  options.model = "other";
  EXPECT_THAT(Run(CreateCommand, options).status.message(), HasSubstr("mlkr"));
}

TEST_F(CliCommandsTest, AGlmlModelHasNoBaseAndShowsEachTargetsGradient) {
  CliOptions options = ModelOptions("local");
  options.create = true;
  options.spec.metric = "glml";
  ASSERT_TRUE(Run(IngestCommand, options).status.ok());
  absl::StatusOr<v1::Model> model = client_->GetModel("local");
  ASSERT_TRUE(model.ok());
  EXPECT_EQ(model->spec().metric(), v1::METRIC_GLML);
  EXPECT_FALSE(model->spec().linear_base());
  const CommandRun metric = Run(MetricCommand, options);
  ASSERT_TRUE(metric.status.ok()) << metric.status;
  EXPECT_THAT(metric.output,
              StartsWith("glml metric of local (per query and target, "
                         "from a global Gaussian of inputs and targets)\n"));
  EXPECT_THAT(metric.output,
              HasSubstr("|gradient of target 0| under the Gaussian"));
}

TEST_F(CliCommandsTest, ARandomFeatureBaseTakesItsOptionsFromTheFlags) {
  CliOptions options = ModelOptions("waves");
  options.create = true;
  options.spec.random_feature_base = true;
  options.spec.random_feature_frequencies = 8;
  options.spec.random_feature_lengthscales = {"0.5", "1.5"};
  ASSERT_TRUE(Run(IngestCommand, options).status.ok());
  absl::StatusOr<v1::Model> model = client_->GetModel("waves");
  ASSERT_TRUE(model.ok());
  ASSERT_TRUE(model->spec().has_random_feature_base());
  EXPECT_EQ(model->spec().random_feature_base().frequencies(), 8u);
  EXPECT_THAT(model->spec().random_feature_base().lengthscales(),
              ElementsAre(0.5, 1.5));
  EXPECT_EQ(model->spec().random_feature_base().ridges_size(), 4);
  // Its predictions carry the base's variance, in columns of their own.
  options.limit = 5;
  const std::vector<std::string> lines = PredictedLines(options);
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_EQ(lines[0],
            "wave,square,predicted_wave,predicted_square,lower_wave,"
            "lower_square,upper_wave,upper_square,spread_wave,spread_square,"
            "base_variance_wave,base_variance_square,neighbors");
  absl::StatusOr<std::vector<v1::Prediction>> expected =
      client_->Predict("waves", rows_.x, Rows::kDim);
  ASSERT_TRUE(expected.ok()) << expected.status();
  for (std::size_t row = 0; row < 5; ++row) {
    const std::vector<std::string> fields = absl::StrSplit(lines[row + 1], ',');
    ASSERT_EQ(fields.size(), 13u);
    for (int t = 0; t < 2; ++t) {
      EXPECT_EQ(std::stod(fields[10 + t]), (*expected)[row].base_variance(t));
    }
  }
  options.limit = 0;
  options.model = "other";
  options.spec.random_feature_ridges = {"0.1", "x"};
  EXPECT_EQ(Run(CreateCommand, options).status.message(),
            "--random_feature_ridges: 'x' is not a number");
  options.spec.random_feature_ridges = {};
  options.spec.random_feature_base = false;
  EXPECT_THAT(Run(CreateCommand, options).status.message(),
              HasSubstr("only with --random_feature_base"));
  EXPECT_EQ(client_->GetModel("other").status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(CliCommandsTest, HealthSaysServing) {
  const CommandRun run = Run(HealthCommand, CliOptions{});
  ASSERT_TRUE(run.status.ok()) << run.status;
  EXPECT_EQ(run.output, "SERVING\n");
}

TEST_F(CliCommandsTest, ReplayStreamsEveryRowThroughLearn) {
  CliOptions options = ModelOptions("arm");
  options.create = true;
  options.limit = 120;
  options.rate = 2000;
  const CommandRun run = Run(ReplayCommand, options);
  ASSERT_TRUE(run.status.ok()) << run.status;
  EXPECT_THAT(run.output, HasSubstr("replayed 120 samples"));
  EXPECT_EQ(ModelSamples("arm"), 120u);
  options.rate = 0;
  EXPECT_THAT(Run(ReplayCommand, options).status.message(),
              HasSubstr("--rate: must be positive"));
}

TEST_F(CliCommandsTest, BenchPredictComparesWithAnEmptyRpc) {
  CliOptions options = ModelOptions("arm");
  options.create = true;
  ASSERT_TRUE(Run(IngestCommand, options).status.ok());
  options.bench.duration = 0.3;
  options.bench.concurrency = 1;
  options.json = directory_ + "/predict.json";
  const CommandRun run = Run(BenchPredictCommand, options);
  ASSERT_TRUE(run.status.ok()) << run.status;
  EXPECT_THAT(run.output, HasSubstr("predict/empty: p50 "));
  std::ifstream file(options.json);
  const nlohmann::json report = nlohmann::json::parse(file);
  EXPECT_EQ(report["kind"], "predict");
  EXPECT_EQ(report["model"]["num_samples"], 400);
  EXPECT_GT(report["requests"].get<double>(), 0);

  options.bench.unary = options.bench.stream = true;
  EXPECT_THAT(Run(BenchPredictCommand, options).status.message(),
              HasSubstr("--unary and --stream: pick one"));
}

// Arms and a predictor streaming into a model created empty: the predictor
// starts once there is something to predict from (it failed at once
// before), reads the model as it stands when asked (--min_learned 0), and
// its ticks are reported beside the arms'.
TEST_F(CliCommandsTest, BenchLearnRunsPredictorsBesideTheArms) {
  CliOptions options;
  options.model = "fleet";
  options.create = true;
  options.rate = 200;
  options.bench.duration = 2;
  options.bench.predictors = 1;
  options.bench.predict_rate = 200;
  options.min_learned = 0;
  options.json = directory_ + "/learn.json";
  const CommandRun run = Run(BenchLearnCommand, options);
  ASSERT_TRUE(run.status.ok()) << run.status << run.output;
  EXPECT_THAT(run.output, HasSubstr("predictors: 1 at 200/s, "));
  std::ifstream file(options.json);
  const nlohmann::json report = nlohmann::json::parse(file);
  const nlohmann::json& predictors = report["predictors"];
  EXPECT_EQ(predictors["clients"], 1);
  EXPECT_EQ(predictors["min_learned"], 0);
  EXPECT_GT(predictors["predictions"].get<double>(), 0);
  EXPECT_TRUE(predictors.contains("late_ticks"));
  EXPECT_TRUE(predictors.contains("max_lag_ms"));
  EXPECT_EQ(ModelSamples("fleet"), 400u);
}

// A short flood past a server whose limits are tiny: every call is
// accounted for (answered, refused with the retry trailer, or of unknown
// outcome), and the model holds exactly the samples acknowledged.
TEST_F(CliCommandsTest, BenchFloodAccountsForEveryCallAndSample) {
  ServerOptions limits;
  limits.limits.max_queued_samples_per_model = 64;
  limits.limits.max_queued_samples = 128;
  limits.limits.max_predictions_in_flight = 1;
  limits.limits.max_predictions_in_flight_per_model = 1;
  ASSERT_NO_FATAL_FAILURE(RestartServer(limits));
  CliOptions options = ModelOptions("flooded");
  options.create = true;
  options.rate = 200;
  options.bench.concurrency = 4;
  options.bench.duration = 1;
  options.bench.calibrate = 0.3;
  options.bench.overload = 10;
  options.json = directory_ + "/flood.json";
  const CommandRun run = Run(BenchFloodCommand, options);
  ASSERT_TRUE(run.status.ok()) << run.status << run.output;
  EXPECT_THAT(run.output, HasSubstr("0 lost, 0 beyond acknowledged"));
  std::ifstream file(options.json);
  const nlohmann::json report = nlohmann::json::parse(file);
  for (const char* kind : {"ingest", "predict"}) {
    const nlohmann::json& tally = report[kind];
    EXPECT_GT(tally["sent"].get<int>(), 0) << kind;
    EXPECT_EQ(tally["sent"].get<int>(),
              tally["ok"].get<int>() + tally["refused"].get<int>() +
                  tally["unknown_outcome"].get<int>() +
                  tally["failed"].get<int>())
        << kind;
    EXPECT_EQ(tally["failed"], 0) << kind << tally["first_failure"];
    EXPECT_EQ(tally["refusals_with_pushback"], tally["refused"]) << kind;
  }
  const nlohmann::json& samples = report["samples"];
  EXPECT_EQ(samples["lost"], 0);
  EXPECT_EQ(ModelSamples("flooded"), samples["after"].get<std::uint64_t>());
  EXPECT_EQ(samples["after"].get<std::uint64_t>(),
            samples["before"].get<std::uint64_t>() +
                samples["acknowledged"].get<std::uint64_t>() +
                samples["beyond_acknowledged"].get<std::uint64_t>());
}

TEST_F(CliCommandsTest, BenchPlotNeedsAReportAndAFolder) {
  CliOptions options;
  EXPECT_THAT(Run(BenchPlotCommand, options).status.message(),
              HasSubstr("--json FILE"));
  options.json = directory_ + "/report.json";
  EXPECT_THAT(Run(BenchPlotCommand, options).status.message(),
              HasSubstr("--plots DIR"));
}

}  // namespace
}  // namespace streamreg
