// Writes the seed corpora of the fuzz targets into DIR/<target>/: valid
// inputs of each format, made by the code that writes that format, so that
// the fuzzers start from inputs that get deep. Run when a format changes:
//   streamreg-fuzz-seeds tests/fuzz/corpus
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/cluster/log_entries.h"
#include "server/hosting/model_registry.h"
#include "server/hosting/model_storage.h"
#include "server/hosting/worker_pool.h"
#include "server/rpc/spec_conversion.h"
#include "streamreg/v1/model_service.pb.h"
#include "streamreg/v1/regression_service.pb.h"
#include "tests/fuzz/fuzz_support.h"

namespace streamreg {
namespace {

namespace fs = std::filesystem;

void Write(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

v1::ModelSpec SmallSpec() {
  v1::ModelSpec spec;
  spec.set_input_dim(3);
  spec.add_target_names("wave");
  spec.add_target_names("square");
  return spec;
}

// `n` samples of a smooth function of 3 inputs, 2 targets.
struct Rows {
  std::vector<double> x, y;
  std::vector<Sample> samples;
  explicit Rows(int n) {
    for (int i = 0; i < n; ++i) {
      const double a = (i % 7) / 7.0, b = (i % 5) / 5.0, c = (i % 3) / 3.0;
      for (double v : {a, b, c}) x.push_back(v);
      y.push_back(a + b);
      y.push_back(c * c);
    }
    for (int i = 0; i < n; ++i) {
      samples.push_back(
          {{&x[3 * i], 3}, {&y[2 * i], 2}, static_cast<std::uint64_t>(i + 1)});
    }
  }
};

void WriteSpecs(const fs::path& dir) {
  std::vector<v1::ModelSpec> specs(9, SmallSpec());
  specs[1].set_metric(v1::METRIC_EGOP);
  specs[2].set_metric(v1::METRIC_MLKR);
  specs[3].set_metric(v1::METRIC_GLML);
  specs[4].set_regressor(v1::REGRESSOR_LOCAL_LINEAR);
  specs[5].set_regressor(v1::REGRESSOR_KERNEL);
  specs[5].set_kernel(v1::KERNEL_EPANECHNIKOV);
  specs[5].add_bandwidth_grid(0.1);
  specs[5].add_bandwidth_grid(0.4);
  specs[6].mutable_capacity()->set_policy(v1::CAPACITY_POLICY_WINDOW);
  specs[6].mutable_capacity()->set_limit(100);
  specs[6].set_linear_base(true);
  specs[7].mutable_tuning()->set_step_ratio(0.5);
  specs[7].mutable_tuning()->set_honest_lag(10);
  specs[7].add_k_grid(2);
  specs[7].add_k_grid(5);
  specs[8].set_metric(v1::METRIC_AUTO);
  specs[8].set_regressor(v1::REGRESSOR_AUTO);
  specs[8].set_per_target_metric(true);
  for (const char* name : {"a", "b", "c"}) specs[8].add_input_names(name);
  for (std::size_t i = 0; i < specs.size(); ++i) {
    Write(dir / absl::StrCat("spec-", i), specs[i].SerializeAsString());
  }
}

// A model's log segment and snapshot, written by the server's own storage.
void WriteJournalAndSnapshot(const fs::path& journal_dir,
                             const fs::path& snapshot_dir) {
  const std::string data_dir = ScratchDirectory();
  StorageOptions options;
  options.snapshot_every_samples = 1'000'000;
  WorkerPool pool(1), learning(1);
  ModelStorage storage(data_dir, options);
  ModelRegistry registry(RegistryLimits{}, HostingPools{&pool, &learning},
                         &storage);
  FUZZ_CHECK(registry.Recover().ok());  // makes models/ and trash/
  const Rows rows(40);
  const fs::path model_dir = fs::path(data_dir) / "models" / "m";
  for (const v1::Metric metric :
       {v1::METRIC_GRADIENT_WEIGHTS, v1::METRIC_EGOP, v1::METRIC_MLKR}) {
    v1::ModelSpec spec = SmallSpec();
    spec.set_metric(metric);
    const std::string tag = v1::Metric_Name(metric);
    ModelConfig config = *ConfigFromSpec(spec);
    // MLKR's as a server makes models now: its Ingest batches are
    // kSamplesAtFixedCountsRecord.
    if (metric == v1::METRIC_MLKR) config.take_over = TakeOverRule::kLogged;
    absl::StatusOr<std::shared_ptr<HostedModel>> model =
        registry.Create("m", config, {"a", "b", "c"});
    if (!model.ok()) {
      std::fprintf(stderr, "%s\n", model.status().ToString().c_str());
      std::abort();
    }
    const std::span<const Sample> all(rows.samples);
    FUZZ_CHECK((*model)->Learn(all.subspan(0, 25), nullptr).ok());
    FUZZ_CHECK((*model)->Learn(all.subspan(25), nullptr).ok());
    FUZZ_CHECK((*model)->Refit({}).ok());
    (*model)->CatchUp();
    for (const auto& entry : fs::directory_iterator(model_dir)) {
      if (entry.path().extension() == ".log") {
        Write(journal_dir / absl::StrCat("wal-", tag), ReadAll(entry.path()));
      }
    }
    FUZZ_CHECK((*model)->Snapshot().ok());
    for (const auto& entry : fs::directory_iterator(model_dir)) {
      const std::string name = entry.path().filename().string();
      std::uint64_t lsn = 0;
      if (entry.path().extension() != ".snap" ||
          !absl::SimpleAtoi(name.substr(9, name.size() - 14), &lsn)) {
        continue;
      }
      std::string bytes = ReadAll(entry.path());
      for (int b = 0; b < 8; ++b)
        bytes.push_back(static_cast<char>(lsn >> (8 * b)));
      Write(snapshot_dir / absl::StrCat("snapshot-", tag), bytes);
    }
    FUZZ_CHECK(registry.Delete("m").ok());
  }
  storage.StopBackground();
  pool.Drain();
  learning.Drain();
  fs::remove_all(data_dir);
}

void WriteLogEntries(const fs::path& dir) {
  const Rows rows(12);
  ModelIdentity identity{.name = "m",
                         .create_time = absl::FromUnixSeconds(1700000000),
                         .config = *ConfigFromSpec(SmallSpec()),
                         .input_names = {"a", "b", "c"}};
  const std::span<const Sample> all(rows.samples);
  Write(dir / "create-samples-refit",
        LengthPrefixed(EncodeCreateEntry(identity)) +
            LengthPrefixed(EncodeSamplesEntry(all.subspan(0, 8))) +
            LengthPrefixed(EncodeRefitEntry()) +
            LengthPrefixed(EncodeSamplesEntry(all.subspan(8))));
  identity.config.take_over = TakeOverRule::kLogged;
  Write(dir / "create-samples-take-over",
        LengthPrefixed(EncodeCreateEntry(identity)) +
            LengthPrefixed(EncodeSamplesEntry(all.subspan(0, 8),
                                              BatchTakeOvers::kAtFixedCounts)) +
            LengthPrefixed(
                EncodeTakeOverEntry({TakeOverKey::Work::kMlkrFit, 0, 9})) +
            LengthPrefixed(EncodeSamplesEntry(all.subspan(8))));
}

// One call of the service fuzzer's input format.
std::string ServiceCall(int method, const std::vector<std::string>& parts) {
  std::string out;
  out.push_back(static_cast<char>(method));
  out.push_back(static_cast<char>(parts.size() - 1));
  for (const std::string& part : parts) out += LengthPrefixed(part);
  return out;
}

void WriteServiceCalls(const fs::path& dir) {
  v1::CreateModelRequest create;
  create.set_name("s");
  *create.mutable_spec() = SmallSpec();
  v1::GetModelRequest get;
  get.set_name("m");
  v1::DeleteModelRequest remove;
  remove.set_name("s");
  v1::GetMetricRequest metric;
  metric.set_name("m");
  v1::RefitRequest refit;
  refit.set_name("m");
  v1::IngestRequest ingest;
  ingest.set_model("m");
  v1::LearnRequest learn;
  learn.set_model("m");
  v1::PredictRequest predict;
  predict.set_model("m");
  const Rows rows(3);
  for (const Sample& sample : rows.samples) {
    v1::Sample* wire = ingest.add_samples();
    wire->mutable_x()->Add(sample.x.begin(), sample.x.end());
    wire->mutable_y()->Add(sample.y.begin(), sample.y.end());
    predict.add_queries()->mutable_x()->Add(sample.x.begin(), sample.x.end());
  }
  *learn.mutable_sample() = ingest.samples(0);
  // A loop's message of several ticks with points ahead, and one of points
  // ahead alone.
  v1::LearnRequest ticks;
  *ticks.mutable_samples() = ingest.samples();
  *ticks.mutable_ahead() = predict.queries();
  v1::LearnRequest ahead;
  *ahead.mutable_ahead() = predict.queries();
  const std::string none;
  Write(dir / "create-ingest-delete",
        ServiceCall(0, {create.SerializeAsString()}) +
            ServiceCall(6, {ingest.SerializeAsString(), none}) +
            ServiceCall(3, {remove.SerializeAsString()}));
  Write(dir / "learn-predict",
        ServiceCall(7, {learn.SerializeAsString(), learn.SerializeAsString()}) +
            ServiceCall(8, {predict.SerializeAsString()}) +
            ServiceCall(9, {predict.SerializeAsString()}));
  Write(dir / "learn-ahead",
        ServiceCall(7, {learn.SerializeAsString(), ticks.SerializeAsString(),
                        ahead.SerializeAsString()}));
  Write(dir / "reads",
        ServiceCall(1, {get.SerializeAsString()}) +
            ServiceCall(2, {v1::ListModelsRequest().SerializeAsString()}) +
            ServiceCall(4, {metric.SerializeAsString()}) +
            ServiceCall(5, {refit.SerializeAsString()}));
  Write(dir / "pings", ServiceCall(10, {none}) + ServiceCall(11, {none, none}));
}

void WriteFlags(const fs::path& dir) {
  // Indexes into server_flags_fuzzer.cc's kValueFlags.
  const std::vector<std::pair<int, std::string>> values = {
      {0, "interval:5"},
      {3, "65536"},
      {6, "2s"},
      {7, "30s"},
      {9, "10m"},
      {10, "262144"},
      {13, "nats://127.0.0.1:4222,nats://127.0.0.1:4223"},
      {15, "3"},
      {16, "3"},
      {17, "5s"}};
  std::string all;
  for (const auto& [index, value] : values) {
    std::string part;
    part.push_back(static_cast<char>(index));
    part += LengthPrefixed(value);
    Write(dir / absl::StrCat("flag-", index), part);
    all += part;
  }
  Write(dir / "all", all);
}

void WriteText(const fs::path& csv_dir, const fs::path& tokens_dir) {
  Write(
      csv_dir / "table",
      "x1, x2 ,target_y,id_t\n0.1,0.2,0.3,1\n-1e3,4.5e-2,7,2\r\n\n8,9,10,3\n");
  Write(tokens_dir / "table",
        "# holders\n"
        "ops      ops-token-0123456789      read,write,admin  *\n"
        "robot    robot-token-0123456789    read,write        arm1. arm2.\n"
        "viewer\tviewer-token-0123456789\tread\tarm1.  # comment\n");
}

}  // namespace
}  // namespace streamreg

int main(int argc, char** argv) {
  using namespace streamreg;
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  SilenceLogs();
  const fs::path root = argv[1];
  WriteSpecs(root / "model_spec_fuzzer");
  WriteJournalAndSnapshot(root / "journal_fuzzer", root / "snapshot_fuzzer");
  WriteLogEntries(root / "log_entry_fuzzer");
  WriteServiceCalls(root / "service_fuzzer");
  WriteFlags(root / "server_flags_fuzzer");
  WriteText(root / "csv_table_fuzzer", root / "access_tokens_fuzzer");
  return 0;
}
