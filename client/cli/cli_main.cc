// streamreg: the command-line client of a streamreg server.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/cli/bench_commands.h"
#include "client/cli/cli_commands.h"
#include "client/tools/security_flags.h"
#include "common/command_line.h"
#include "common/nearest_name.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051",
          "server address host:port, or several servers of a cluster "
          "separated by commas (calls go to the servers of their model)");
ABSL_FLAG(absl::Duration, timeout, absl::Seconds(60), "deadline of each call");
ABSL_FLAG(std::size_t, batch, 1000, "samples or queries per message");
ABSL_FLAG(std::string, name, "", "name of the model to create");
ABSL_FLAG(std::string, model, "", "model name");
ABSL_FLAG(std::uint32_t, inputs, streamreg::SpecOptions{}.inputs,
          "number of inputs (default: the --csv's input columns)");
ABSL_FLAG(std::string, targets, streamreg::SpecOptions{}.targets,
          "number of targets M, or their names a,b,c (default: the --csv's "
          "target_* columns)");
ABSL_FLAG(std::string, metric, streamreg::SpecOptions{}.metric,
          "the metric: euclidean, gw (gradient weights), egop, mlkr (metric "
          "learning for kernel regression), glml (generative local metric "
          "learning: a metric per query; no linear base) or auto (per "
          "target, the candidate with the least honest error)");
ABSL_FLAG(std::string, regressor, streamreg::SpecOptions{}.regressor,
          "the regressor: knn, kernel, local_linear or auto (per target, "
          "k-NN or local linear by the honest error)");
ABSL_FLAG(std::string, kernel, streamreg::SpecOptions{}.kernel,
          "the kernel regressor's kernel: box, triangular, epanechnikov or "
          "gaussian");
ABSL_FLAG(std::string, capacity, streamreg::SpecOptions{}.capacity,
          "the samples kept: unbounded, window:N or reservoir:N");
ABSL_FLAG(std::uint32_t, mlkr_rank, streamreg::SpecOptions{}.mlkr_rank,
          "the rank of an MLKR map (0: full rank, one row per input)");
ABSL_FLAG(bool, per_target, streamreg::SpecOptions{}.per_target,
          "one metric (and index) per target instead of one shared");
ABSL_FLAG(bool, linear_base, streamreg::SpecOptions{}.linear_base,
          "a linear base under the regressor: an online ridge regression "
          "whose residuals the regressor learns (--nolinear_base: none; "
          "never with --metric glml)");
ABSL_FLAG(bool, per_target_base, streamreg::SpecOptions{}.per_target_base,
          "with the linear base: each target predicts with it or without it, "
          "whichever has the lower honest error");
ABSL_FLAG(bool, combine, streamreg::SpecOptions{}.combine,
          "each target's prediction combines its candidates (the regressors "
          "scored, with and without the base, and the base alone) by online "
          "aggregation of their errors, instead of choosing one");
ABSL_FLAG(bool, random_feature_base,
          streamreg::SpecOptions{}.random_feature_base,
          "with the base: a random-feature ridge (random Fourier features of "
          "the inputs in the learned metric's coordinates, plus the linear "
          "part) instead of the linear base");
ABSL_FLAG(std::uint32_t, random_feature_frequencies,
          streamreg::SpecOptions{}.random_feature_frequencies,
          "the random-feature base's frequencies D (2D features; 0: 64)");
ABSL_FLAG(std::vector<std::string>, random_feature_lengthscales,
          streamreg::SpecOptions{}.random_feature_lengthscales,
          "the random-feature base's candidate lengthscales, comma-separated, "
          "in units of sqrt(inputs) (empty: 0.25,0.5,1,2)");
ABSL_FLAG(std::vector<std::string>, random_feature_ridges,
          streamreg::SpecOptions{}.random_feature_ridges,
          "the random-feature base's candidate ridges, comma-separated "
          "(empty: 0.001,0.01,0.1,1)");
ABSL_FLAG(double, interval_level, streamreg::SpecOptions{}.interval_level,
          "the coverage of the predictions' intervals, in (0, 1): a new "
          "model's (0: 0.9), or predict's (0: the model's)");
ABSL_FLAG(std::uint32_t, interval_window,
          streamreg::SpecOptions{}.interval_window,
          "a new model's honest scores kept per target to calibrate its "
          "intervals (0: 2000)");
ABSL_FLAG(double, interval_step, streamreg::SpecOptions{}.interval_step,
          "a new model's adaptive conformal step, in [0, 1) (0: split "
          "conformal; < 0: 0.005)");
ABSL_FLAG(double, base_ridge, streamreg::SpecOptions{}.base_ridge,
          "the linear base's ridge on standardized inputs, scikit-learn's "
          "Ridge alpha (< 0: the server's, 1)");
ABSL_FLAG(double, base_relative_ridge,
          streamreg::SpecOptions{}.base_relative_ridge,
          "the linear base's ridge per sample: it adds this times the "
          "samples' weight to --base_ridge, so that it never fades (< 0: the "
          "server's, 0.03)");
ABSL_FLAG(double, base_forgetting, streamreg::SpecOptions{}.base_forgetting,
          "the linear base's forgetting factor, in (0, 1] (1: every sample "
          "weighs the same; < 0: the server's, 1)");
ABSL_FLAG(std::vector<std::string>, tuning, streamreg::SpecOptions{}.tuning,
          "a new model's other settings, name=value,... (any field of "
          "Tuning in proto/streamreg/v1/model.proto: "
          "--tuning honest_lag=100,step_ratio=0.25)");
ABSL_FLAG(std::uint64_t, seed, streamreg::SpecOptions{}.seed,
          "seed of the model's random choices (reservoir)");
ABSL_FLAG(std::string, csv, streamreg::CliOptions{}.csv,
          "CSV file (data/README.md convention)");
ABSL_FLAG(std::string, out, streamreg::CliOptions{}.out,
          "the predictions' CSV file (-: stdout)");
ABSL_FLAG(bool, legacy_columns, streamreg::CliOptions{}.legacy_columns,
          "predict: the column names of earlier builds (target_<name> for "
          "the prediction, no truth column), for scripts not yet moved to "
          "predicted_<name>; removed in the next release");
ABSL_FLAG(std::string, neighbors_out, streamreg::CliOptions{}.neighbors_out,
          "predict: also write the samples each prediction used (id, "
          "distance, target, inputs) to this CSV, a row per neighbour");
ABSL_FLAG(std::optional<std::uint64_t>, min_learned, std::nullopt,
          "predict, bench learn's predictors: answer from a model that has "
          "learned at least N samples, on any of its servers (an ingest's "
          "\"the model has N samples\" reads that ingest; 0: the model as "
          "it stands, at once); unset: once the answering server has "
          "learned every sample it acknowledged");
ABSL_FLAG(double, rate, streamreg::CliOptions{}.rate,
          "samples per second (bench learn: per robot)");
ABSL_FLAG(std::uint64_t, limit, streamreg::CliOptions{}.limit,
          "use only the first N rows of the CSV (0: all)");
ABSL_FLAG(bool, by_position, streamreg::CliOptions{}.by_position,
          "match the CSV's columns to the model's inputs and targets by their "
          "order, not by their names (the input columns in order, then the "
          "target_* columns)");
ABSL_FLAG(bool, replace, streamreg::CliOptions{}.replace,
          "delete a model of that name first, if there is one (its samples "
          "go with it), so that a rerun starts afresh");
ABSL_FLAG(bool, create, streamreg::CliOptions{}.create,
          "create the model if it does not exist (inputs and targets from "
          "the CSV's header, or the simulated arm's; the other spec flags "
          "as for create)");
ABSL_FLAG(std::string, json, streamreg::CliOptions{}.json,
          "info/metric: print JSON (a bare --json); bench: write the report "
          "to FILE (- = stdout); bench plot: the report to plot");
ABSL_FLAG(bool, raw, streamreg::CliOptions{}.raw,
          "info: print the server's Model message as protobuf text");
ABSL_FLAG(std::uint32_t, concurrency, streamreg::BenchOptions{}.concurrency,
          "bench predict: clients");
ABSL_FLAG(double, duration, streamreg::BenchOptions{}.duration,
          "bench: seconds to measure (each phase)");
ABSL_FLAG(bool, unary, streamreg::BenchOptions{}.unary,
          "bench predict: Predict and Ping (default)");
ABSL_FLAG(bool, stream, streamreg::BenchOptions{}.stream,
          "bench predict: PredictStream and PingStream");
ABSL_FLAG(std::uint32_t, queries, streamreg::BenchOptions{}.queries,
          "bench predict: queries per request");
ABSL_FLAG(std::uint32_t, robots, streamreg::BenchOptions{}.robots,
          "bench learn: simulated arms");
ABSL_FLAG(bool, model_per_robot, streamreg::BenchOptions{}.model_per_robot,
          "bench learn: robot r streams into its own model, --model's name "
          "with -r appended (all created with --create)");
ABSL_FLAG(bool, answer_when_durable,
          streamreg::BenchOptions{}.answer_when_durable,
          "bench learn: each answer waits until its sample is durable (the "
          "cautious mode) instead of coming first");
ABSL_FLAG(std::uint32_t, batch_ticks, streamreg::BenchOptions{}.batch_ticks,
          "bench learn: each arm's loop runs on a RealtimeChannel, which "
          "sends its samples this many ticks a message with the desired "
          "states of the ticks ahead (LearnRequest.ahead); each tick uses "
          "the prediction in hand when it is due (0: one message a tick, "
          "answered within it)");
ABSL_FLAG(std::uint32_t, ahead_ticks, streamreg::BenchOptions{}.ahead_ticks,
          "bench learn, with --batch_ticks: how many ticks ahead the loop "
          "hands desired states (the channel's horizon)");
ABSL_FLAG(std::uint32_t, lead_ticks, streamreg::BenchOptions{}.lead_ticks,
          "bench learn, with --batch_ticks: a desired state due within this "
          "many ticks is asked for at once (the channel's lead_ticks); each "
          "is asked lead_ticks to lead_ticks + batch_ticks ahead");
ABSL_FLAG(int, realtime_priority, streamreg::BenchOptions{}.realtime_priority,
          "bench learn: run each arm's and predictor's control loop (bench "
          "control: the controller's loop) at this SCHED_FIFO priority, 1 to "
          "99, as a robot controller runs (needs "
          "CAP_SYS_NICE or an RLIMIT_RTPRIO at least this high; 0: normal "
          "scheduling)");
ABSL_FLAG(std::uint32_t, predictors, streamreg::BenchOptions{}.predictors,
          "bench learn: clients predicting meanwhile, each a controller's "
          "loop through PredictStream (starting a second after the arms when "
          "the model starts empty)");
ABSL_FLAG(double, predict_rate, streamreg::BenchOptions{}.predict_rate,
          "bench learn: predictions per second per predictor");
ABSL_FLAG(std::uint64_t, robot_seed, streamreg::CliOptions{}.robot_seed,
          "bench: the simulated arms' task (streamreg-robot-sim --seed)");
ABSL_FLAG(double, start_s, streamreg::BenchOptions{}.start_s,
          "bench: seconds into the task the robots start (robot r 37 r s "
          "later; predict's queries 3000 s later); negative: 1000 s plus "
          "the model's samples / rate, so each run streams new states");
ABSL_FLAG(double, payload_kg, streamreg::BenchOptions{}.payload_kg,
          "bench learn: the payload's mass");
ABSL_FLAG(double, payload_at, streamreg::BenchOptions{}.payload_at,
          "bench learn: seconds in when every arm picks up the payload "
          "(negative: never)");
ABSL_FLAG(double, overload, streamreg::BenchOptions{}.overload,
          "bench flood: the offered load, in multiples of the capacity "
          "measured first");
ABSL_FLAG(double, calibrate, streamreg::BenchOptions{}.calibrate,
          "bench flood: seconds measuring the capacity first");
ABSL_FLAG(double, pause_at, streamreg::BenchOptions{}.pause_at,
          "bench control: stop the server --server_pid (SIGSTOP) this many "
          "seconds into the run, and resume it (SIGCONT) --pause_for later "
          "(<0: never)");
ABSL_FLAG(double, pause_for, streamreg::BenchOptions{}.pause_for,
          "bench control: how long the server stays stopped, in seconds");
ABSL_FLAG(double, max_half_width, streamreg::BenchOptions{}.max_half_width_nm,
          "bench control: a learned residual whose interval's half width "
          "exceeds this (N·m) in any joint is not used (the default: only "
          "an infinite one, before the model has scored enough)");
ABSL_FLAG(int, server_pid, streamreg::BenchOptions{}.server_pid,
          "bench flood: the server's process id, to sample its resident "
          "memory (/proc; 0: not sampled)");
ABSL_FLAG(std::string, plots, streamreg::BenchOptions{}.plots,
          "bench: draw PNG plots into DIR (gnuplot)");

namespace streamreg {
namespace {

// The flags, read once: the only place that reads the command flags.
CliOptions OptionsFromFlags() {
  CliOptions options;
  options.model = absl::GetFlag(FLAGS_model);
  if (options.model.empty()) options.model = absl::GetFlag(FLAGS_name);
  options.csv = absl::GetFlag(FLAGS_csv);
  options.out = absl::GetFlag(FLAGS_out);
  options.neighbors_out = absl::GetFlag(FLAGS_neighbors_out);
  options.legacy_columns = absl::GetFlag(FLAGS_legacy_columns);
  options.min_learned = absl::GetFlag(FLAGS_min_learned);
  options.rate = absl::GetFlag(FLAGS_rate);
  options.limit = absl::GetFlag(FLAGS_limit);
  options.create = absl::GetFlag(FLAGS_create);
  options.replace = absl::GetFlag(FLAGS_replace);
  options.by_position = absl::GetFlag(FLAGS_by_position);
  options.json = absl::GetFlag(FLAGS_json);
  options.raw = absl::GetFlag(FLAGS_raw);
  options.robot_seed = absl::GetFlag(FLAGS_robot_seed);
  SpecOptions& spec = options.spec;
  spec.inputs = absl::GetFlag(FLAGS_inputs);
  spec.targets = absl::GetFlag(FLAGS_targets);
  spec.metric = absl::GetFlag(FLAGS_metric);
  spec.regressor = absl::GetFlag(FLAGS_regressor);
  spec.kernel = absl::GetFlag(FLAGS_kernel);
  spec.capacity = absl::GetFlag(FLAGS_capacity);
  spec.mlkr_rank = absl::GetFlag(FLAGS_mlkr_rank);
  spec.per_target = absl::GetFlag(FLAGS_per_target);
  spec.linear_base = absl::GetFlag(FLAGS_linear_base);
  spec.per_target_base = absl::GetFlag(FLAGS_per_target_base);
  spec.combine = absl::GetFlag(FLAGS_combine);
  spec.random_feature_base = absl::GetFlag(FLAGS_random_feature_base);
  spec.random_feature_frequencies =
      absl::GetFlag(FLAGS_random_feature_frequencies);
  spec.random_feature_lengthscales =
      absl::GetFlag(FLAGS_random_feature_lengthscales);
  spec.random_feature_ridges = absl::GetFlag(FLAGS_random_feature_ridges);
  spec.interval_level = absl::GetFlag(FLAGS_interval_level);
  spec.interval_window = absl::GetFlag(FLAGS_interval_window);
  spec.interval_step = absl::GetFlag(FLAGS_interval_step);
  spec.base_ridge = absl::GetFlag(FLAGS_base_ridge);
  spec.base_relative_ridge = absl::GetFlag(FLAGS_base_relative_ridge);
  spec.base_forgetting = absl::GetFlag(FLAGS_base_forgetting);
  spec.seed = absl::GetFlag(FLAGS_seed);
  spec.tuning = absl::GetFlag(FLAGS_tuning);
  BenchOptions& bench = options.bench;
  bench.concurrency = absl::GetFlag(FLAGS_concurrency);
  bench.duration = absl::GetFlag(FLAGS_duration);
  bench.unary = absl::GetFlag(FLAGS_unary);
  bench.stream = absl::GetFlag(FLAGS_stream);
  bench.queries = absl::GetFlag(FLAGS_queries);
  bench.robots = absl::GetFlag(FLAGS_robots);
  bench.model_per_robot = absl::GetFlag(FLAGS_model_per_robot);
  bench.answer_when_durable = absl::GetFlag(FLAGS_answer_when_durable);
  bench.batch_ticks = absl::GetFlag(FLAGS_batch_ticks);
  bench.ahead_ticks = absl::GetFlag(FLAGS_ahead_ticks);
  bench.lead_ticks = absl::GetFlag(FLAGS_lead_ticks);
  bench.realtime_priority = absl::GetFlag(FLAGS_realtime_priority);
  bench.predictors = absl::GetFlag(FLAGS_predictors);
  bench.predict_rate = absl::GetFlag(FLAGS_predict_rate);
  bench.start_s = absl::GetFlag(FLAGS_start_s);
  bench.payload_kg = absl::GetFlag(FLAGS_payload_kg);
  bench.payload_at = absl::GetFlag(FLAGS_payload_at);
  bench.plots = absl::GetFlag(FLAGS_plots);
  bench.overload = absl::GetFlag(FLAGS_overload);
  bench.calibrate = absl::GetFlag(FLAGS_calibrate);
  bench.server_pid = absl::GetFlag(FLAGS_server_pid);
  bench.pause_at = absl::GetFlag(FLAGS_pause_at);
  bench.pause_for = absl::GetFlag(FLAGS_pause_for);
  bench.max_half_width_nm = absl::GetFlag(FLAGS_max_half_width);
  return options;
}

// One command of the CLI: the words that name it, its usage and flags, and
// what runs it.
struct Subcommand {
  std::vector<std::string> words;  // {"create"}, {"bench", "learn"}
  std::string summary_line;        // for the command list
  CommandUsage usage;
  CommandFunction run;
};

// Flags that make a model, for create and for --create.
const std::vector<std::string> kSpecFlags = {"inputs",
                                             "targets",
                                             "metric",
                                             "mlkr_rank",
                                             "regressor",
                                             "kernel",
                                             "capacity",
                                             "per_target",
                                             "linear_base",
                                             "per_target_base",
                                             "combine",
                                             "base_ridge",
                                             "base_relative_ridge",
                                             "base_forgetting",
                                             "random_feature_base",
                                             "random_feature_frequencies",
                                             "random_feature_lengthscales",
                                             "random_feature_ridges",
                                             "interval_level",
                                             "interval_window",
                                             "interval_step",
                                             "tuning",
                                             "seed"};

std::vector<std::string> Concat(std::vector<std::string> a,
                                const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Makes a subcommand's entry: its words, the line the command list shows,
// and its usage, with the connection flags every command shares.
class SubcommandMaker {
 public:
  SubcommandMaker()
      : connection_(
            Concat({"server", "timeout"},
                   FlagsDefinedIn({"client/tools/security_flags.cc"}))) {}

  Subcommand operator()(std::vector<std::string> words,
                        std::string summary_line, std::string synopsis,
                        std::string summary, std::vector<std::string> flags,
                        std::vector<std::string> examples,
                        CommandFunction run) const {
    return Subcommand{
        .words = words,
        .summary_line = std::move(summary_line),
        .usage = {.name = "streamreg " + absl::StrJoin(words, " "),
                  .synopsis = std::move(synopsis),
                  .summary = std::move(summary),
                  .flags = std::move(flags),
                  .shared_flags_heading = "Connection flags",
                  .shared_flags = connection_,
                  .examples = std::move(examples)},
        .run = run};
  }

 private:
  std::vector<std::string> connection_;
};

// Creating, listing, reading and deleting models.
std::vector<Subcommand> ModelSubcommands(const SubcommandMaker& command) {
  return {
      command({"create"}, "create a model",
              "--name NAME (--csv FILE | --inputs D --targets M|a,b,..) "
              "[flags]",
              "Creates an empty model. Inputs and targets come from --inputs "
              "and --targets or from the header of --csv (target_* columns "
              "are targets, id_* skipped, the rest inputs). A model of that "
              "name is refused (ALREADY_EXISTS), or with --replace deleted "
              "first.",
              Concat({"name", "csv", "replace"}, kSpecFlags),
              {"streamreg create --name arm --csv data/sarcos/sarcos_test.csv "
               "--metric gw",
               "streamreg create --name arm --csv train.csv --replace",
               "streamreg create --name arm --inputs 21 --targets 7 --metric "
               "egop --regressor knn"},
              CreateCommand),
      command({"list"}, "list the models", "[flags]",
              "Lists the server's models: name, samples, prequential nMSE.", {},
              {"streamreg list"}, ListCommand),
      command(
          {"info"}, "a model's summary, spec and live stats",
          "--model NAME [--json | --raw]",
          "Prints a summary of the model: inputs and targets, metric, "
          "regressor and base, samples, memory, creation and last "
          "snapshot (dates and ages), and per target the prequential "
          "and honest nMSE, the regressor, metric and k or bandwidth it "
          "chose, and its interval and coverage. --json prints the "
          "whole Model (spec in effect and every live stat) as JSON, "
          "--raw as protobuf text.",
          {"model", "json", "raw"},
          {"streamreg info --model arm", "streamreg info --model arm --json"},
          InfoCommand),
      command({"delete"}, "delete a model", "--model NAME",
              "Deletes the model and its files.", {"model"},
              {"streamreg delete --model arm"}, DeleteCommand),
  };
}

// A model's data, metric and learning, and the server's health.
std::vector<Subcommand> DataSubcommands(const SubcommandMaker& command) {
  return {
      command(
          {"ingest"}, "stream a CSV into a model (Ingest)",
          "--model NAME --csv FILE [--create] [--limit N] [--batch B]",
          "Learns every row of the CSV, in batches of --batch, with a "
          "progress bar. Retried batches are not learned twice (sample "
          "ids). --create makes the model from the file's header if it "
          "does not exist. Columns are matched to the model's input and "
          "target names (--by_position: by their order).",
          Concat({"model", "csv", "create", "by_position", "limit", "batch"},
                 kSpecFlags),
          {"streamreg ingest --model arm --csv data/sarcos/sarcos_test.csv "
           "--create"},
          IngestCommand),
      command(
          {"predict"}, "predict a CSV's rows",
          "--model NAME --csv IN [--out OUT] [--neighbors_out FILE] "
          "[--limit N] [--min_learned N]",
          "Predicts every row of the CSV and writes, per target, "
          "predicted_<name>, lower_<name> and upper_<name> (the "
          "interval at --interval_level, or the model's) and "
          "spread_<name>, with a random-feature base also "
          "base_variance_<name>, and a neighbors column (to stdout or "
          "--out). If the file has the targets too, the CSV starts "
          "with their true values under their names (<name>), and the "
          "command prints the nMSE of each and the fraction within the "
          "intervals. --legacy_columns writes the names before "
          "(target_<name> for the prediction, no truth). "
          "--neighbors_out also writes the samples each prediction "
          "used: row, target, rank, sample_id, distance (in the "
          "learned metric's coordinates), y and the inputs.",
          {"model", "csv", "out", "neighbors_out", "legacy_columns",
           "by_position", "limit", "batch", "interval_level", "min_learned"},
          {"streamreg predict --model arm --csv test.csv --out "
           "predictions.csv"},
          PredictCommand),
      command(
          {"metric"}, "the learned metric, as bars", "--model NAME [--json]",
          "Prints the learned metric: gradient weights as a bar chart, or "
          "the EGOP's diagonal and spectrum; --json prints the whole "
          "report as JSON.",
          {"model", "json"}, {"streamreg metric --model arm"}, MetricCommand),
      command({"refit"}, "recompute the metric in batch", "--model NAME",
              "Recomputes the metric with the papers' batch estimator over "
              "every stored sample and rebuilds the index, with a progress "
              "bar.",
              {"model"}, {"streamreg refit --model arm"}, RefitCommand),
      command({"replay"}, "replay a CSV through Learn at a rate",
              "--model NAME --csv FILE --rate HZ [--create] [--limit N]",
              "Sends the rows one per tick through a Learn stream, like a "
              "robot controller, and prints the live prequential nMSE and "
              "latency percentiles. Columns are matched as by ingest.",
              Concat({"model", "csv", "rate", "create", "by_position", "limit"},
                     kSpecFlags),
              {"streamreg replay --model arm --csv data/sarcos/sarcos_test.csv "
               "--rate 1000 --create"},
              ReplayCommand),
      command({"health"}, "the server's health", "[flags]",
              "Prints the server's health status (SERVING or NOT_SERVING); "
              "exits 1 if it cannot be reached.",
              {}, {"streamreg --server 10.0.0.5:50051 health"}, HealthCommand),
  };
}

// The benchmarks.
std::vector<Subcommand> BenchSubcommands(const SubcommandMaker& command) {
  return {
      command(
          {"bench", "predict"}, "load on Predict beside the empty Ping",
          "--model NAME [--concurrency C] [--duration S] [--unary|--stream] "
          "[--queries Q] [--json FILE] [--plots DIR]",
          "Closed-loop load on Predict (or PredictStream with --stream) "
          "beside the no-op Ping (PingStream), so the report says what "
          "the model adds to the transport. Queries come from --csv or "
          "from the simulated arm. Given a cluster's server, the load goes "
          "to a server that serves the model.",
          {"model", "concurrency", "duration", "unary", "stream", "queries",
           "csv", "by_position", "robot_seed", "start_s", "json", "plots"},
          {"streamreg bench predict --model arm --concurrency 4 "
           "--duration 10 --stream --json predict.json --plots plots/"},
          BenchPredictCommand),
      command({"bench", "learn"}, "simulated arms streaming through Learn",
              "--model NAME [--create] [--robots R] [--model_per_robot] "
              "[--rate HZ] [--duration S] [--predictors P] [--min_learned N] "
              "[--answer_when_durable] [--batch_ticks B [--ahead_ticks H] "
              "[--lead_ticks L]] "
              "[--realtime_priority N] [--json FILE] "
              "[--plots DIR]",
              "Streams simulated robot arms through Learn at a fixed rate "
              "each (optionally while clients predict) and reports every "
              "tick's latency, late ticks, how far learning lagged behind "
              "the answers, how long each sample took to be reported "
              "durable (the durability lag), and the prequential nMSE.",
              Concat({"model",       "create",
                      "robots",      "model_per_robot",
                      "rate",        "duration",
                      "predictors",  "predict_rate",
                      "min_learned", "robot_seed",
                      "start_s",     "payload_kg",
                      "payload_at",  "answer_when_durable",
                      "batch_ticks", "ahead_ticks",
                      "lead_ticks",  "realtime_priority",
                      "json",        "plots"},
                     kSpecFlags),
              {"streamreg bench learn --model arm --create --robots 1 --rate "
               "1000 --duration 10"},
              BenchLearnCommand),
      command({"bench", "flood"}, "overload: open-loop clients past capacity",
              "--model NAME [--create] [--concurrency C] [--overload X] "
              "[--duration S] [--rate HZ] [--server_pid PID] [--json FILE]",
              "Measures the server's capacity (closed-loop Ingest and "
              "Predict), then floods it open-loop from C clients at X times "
              "that while a simulated arm streams Learn at --rate and the "
              "health service is checked every 100 ms; reports what was "
              "admitted and refused and their latencies, the arm's latency, "
              "health, the server's peak memory (with --server_pid), and "
              "fails if any acknowledged sample is missing from the model.",
              Concat({"model", "create", "concurrency", "overload", "calibrate",
                      "duration", "rate", "server_pid", "robot_seed", "json"},
                     kSpecFlags),
              {"streamreg bench flood --model arm --create --concurrency 50 "
               "--overload 10 --duration 60 --server_pid $(pidof "
               "streamreg-server)"},
              BenchFloodCommand),
      command({"bench", "control"},
              "a computed-torque controller with the learned correction",
              "--model NAME [--create] [--duration S] [--rate HZ] "
              "[--payload_kg KG] [--server_pid PID --pause_at S "
              "[--pause_for S]] [--max_half_width NM] "
              "[--realtime_priority N] [--json FILE] [--plots DIR]",
              "Runs a computed-torque controller on the simulated Panda "
              "holding a payload its own rigid-body model does not know, at "
              "--rate through a RealtimeChannel that learns what the model "
              "misses (feedforward = the model's torque plus the learned "
              "residual, the model's alone when none came in time), and the "
              "same controller without it on the same motion; reports the "
              "joint tracking error of both by second, the ticks that fell "
              "back, and, with --pause_at, what a stopped server did to it.",
              Concat({"model", "create", "duration", "rate", "payload_kg",
                      "robot_seed", "server_pid", "pause_at", "pause_for",
                      "max_half_width", "realtime_priority", "json", "plots"},
                     kSpecFlags),
              {"streamreg bench control --model ct --create --duration 60 "
               "--server_pid $(pidof streamreg-server) --pause_at 30"},
              BenchControlCommand),
      command({"bench", "plot"}, "PNG plots of a bench report",
              "--json FILE --plots DIR",
              "Draws the PNG plots of a report written by bench predict or "
              "bench learn (gnuplot).",
              {"json", "plots"},
              {"streamreg bench plot --json learn.json --plots plots/"},
              BenchPlotCommand),
  };
}

std::vector<Subcommand> Subcommands() {
  const SubcommandMaker command;
  std::vector<Subcommand> all = ModelSubcommands(command);
  for (std::vector<Subcommand> group :
       {DataSubcommands(command), BenchSubcommands(command)}) {
    std::move(group.begin(), group.end(), std::back_inserter(all));
  }
  return all;
}

CommandUsage ProgramUsage(const std::vector<Subcommand>& commands) {
  std::string list = "Commands:\n";
  for (const Subcommand& c : commands) {
    absl::StrAppend(&list, "  ",
                    absl::StrFormat("%-15s", absl::StrJoin(c.words, " ")),
                    c.summary_line, "\n");
  }
  absl::StrAppend(&list,
                  "\n'streamreg COMMAND --help' lists a command's flags.");
  return {.name = "streamreg",
          .synopsis = "[--server HOST:PORT] COMMAND [flags]",
          .summary = absl::StrCat(
              "The command-line client of a streamreg server: models, data, "
              "predictions, and load.\n\n",
              list),
          .shared_flags_heading = "Connection flags (every command)",
          .shared_flags = commands.front().usage.shared_flags,
          .examples = {"streamreg --server 127.0.0.1:50051 list",
                       "streamreg create --help"}};
}

// A bare --json (the last argument, or followed by another flag) means
// --json=- (print JSON), so `info --json` keeps working beside
// `bench ... --json FILE`.
std::vector<std::string> WithBareJsonFlag(std::vector<std::string> args) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const bool last = i + 1 == args.size();
    if (args[i] == "--json" && (last || args[i + 1].starts_with("-"))) {
      args[i] = "--json=-";
    }
  }
  return args;
}

// How long a command waits for the server to accept a connection before
// it says none is there.
constexpr absl::Duration kConnectWithin = absl::Seconds(1);

// A model that was not found, with the one of the server's its name is
// likely a typo of ("did you mean 'arm'?"), or how to see them.
absl::Status WithModelsNamed(Client& client, const std::string& model,
                             const absl::Status& status) {
  if (!absl::IsNotFound(status) || model.empty() ||
      !absl::StrContains(status.message(), absl::StrCat("'", model, "'"))) {
    return status;
  }
  absl::StatusOr<std::vector<v1::Model>> models = client.ListModels();
  if (!models.ok()) return status;
  std::vector<std::string> names;
  for (const v1::Model& listed : *models) names.push_back(listed.name());
  std::string hint = DidYouMean(model, names);
  if (hint.empty()) {
    hint = names.empty()
               ? " (the server has no models yet; `streamreg create` makes one)"
               : absl::StrCat(" (`streamreg list` shows the ", names.size(),
                              names.size() == 1 ? " model" : " models",
                              " it has)");
  }
  return absl::Status(status.code(), absl::StrCat(status.message(), hint));
}

int Run(const std::vector<std::string>& arguments) {
  const std::vector<Subcommand> commands = Subcommands();
  const CommandUsage program = ProgramUsage(commands);
  const std::vector<std::string> words = PositionalWords(arguments);
  const Subcommand* chosen = nullptr;
  for (const Subcommand& c : commands) {
    if (words.size() >= c.words.size() &&
        std::equal(c.words.begin(), c.words.end(), words.begin())) {
      chosen = &c;
    }
  }
  if (chosen == nullptr) {
    if (words.empty()) {
      // No command: the program's own help (--help), else its usage.
      ParseCommandLine(arguments, program);
      std::fputs(HelpText(program).c_str(), stderr);
      return 2;
    }
    const std::string what = words[0] == "bench" && words.size() > 1
                                 ? "bench " + words[1]
                                 : words[0];
    std::vector<std::string> names;
    for (const Subcommand& c : commands) {
      names.push_back(absl::StrJoin(c.words, " "));
    }
    return ReportUsageError(
        "streamreg",
        absl::StrCat("unknown command '", what, "'", DidYouMean(what, names)));
  }
  const std::vector<std::string> positional =
      ParseCommandLine(arguments, chosen->usage);
  if (positional.size() != chosen->words.size()) {
    return ReportUsageError(
        chosen->usage.name,
        "unexpected argument '" + positional[chosen->words.size()] + "'");
  }
  const CliOptions cli_options = OptionsFromFlags();
  // A mistyped flag value is said first (exit 2), not after the server is
  // looked for: the spec's flags have valid defaults, so any command may
  // check them.
  if (const absl::Status spec =
          SpecFromOptions(cli_options.spec, nullptr).status();
      IsUsageError(spec)) {
    return ReportFailure(chosen->usage.name, spec);
  }
  ClientOptions options;
  options.address = absl::GetFlag(FLAGS_server);
  options.timeout = absl::GetFlag(FLAGS_timeout);
  options.batch_size = std::max<std::size_t>(1, absl::GetFlag(FLAGS_batch));
  if (absl::Status status = ApplySecurityFlags(&options); !status.ok()) {
    return ReportFailure("streamreg", status);
  }
  Client client(options);
  // Said at once, not after the calls' retries: no server there.
  if (const absl::Status reachable = client.WaitForServer(kConnectWithin);
      !reachable.ok()) {
    // Over TLS a handshake that fails (another CA, a server without TLS)
    // looks the same from here.
    std::fprintf(
        stderr,
        "%s: %s (is a server running there? `make run` starts one; "
        "--server HOST:PORT names another%s)\n",
        chosen->usage.name.c_str(), std::string(reachable.message()).c_str(),
        options.tls.enabled ? "; over TLS, does --tls_ca sign its certificate?"
                            : "");
    return 1;
  }
  if (const absl::Status status = chosen->run(client, cli_options, stdout);
      !status.ok()) {
    return ReportFailure(chosen->usage.name,
                         WithModelsNamed(client, cli_options.model, status));
  }
  return 0;
}

}  // namespace
}  // namespace streamreg

int main(int argc, char** argv) {
  return streamreg::Run(streamreg::WithBareJsonFlag(
      std::vector<std::string>(argv + 1, argv + argc)));
}
