#ifndef STREAMREG_CLIENT_CLI_CLI_OPTIONS_H_
#define STREAMREG_CLIENT_CLI_CLI_OPTIONS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace streamreg {

// How to make a model (streamreg create, and --create): --inputs,
// --targets, --metric, --regressor, --kernel, --capacity, --per_target,
// --linear_base, --per_target_base, --combine, --base_ridge,
// --base_relative_ridge,
// --base_forgetting, --random_feature_base (and its
// --random_feature_frequencies, _lengthscales, _ridges), --interval_level,
// --interval_window, --interval_step, --seed, --tuning. The
// defaults here are the flags' defaults.
struct SpecOptions {
  std::uint32_t inputs = 0;  // 0: from the CSV's header
  std::string targets;       // a count or names a,b,..; empty: from the CSV
  std::string metric = "mlkr";
  std::uint32_t mlkr_rank = 0;  // 0: full rank
  std::string regressor = "knn";
  std::string kernel = "box";
  std::string capacity = "unbounded";
  bool per_target = false;
  bool linear_base = true;
  bool per_target_base = false;
  bool combine = false;
  double base_ridge = -1;           // < 0: the server's
  double base_relative_ridge = -1;  // < 0: the server's
  double base_forgetting = -1;      // < 0: the server's
  bool random_feature_base = false;
  std::uint32_t random_feature_frequencies = 0;          // 0: the server's
  std::vector<std::string> random_feature_lengthscales;  // empty: the server's
  std::vector<std::string> random_feature_ridges;        // empty: the server's
  // The intervals' coverage: a new model's, or (predict) the predictions'
  // (0: the server's default, or the model's).
  double interval_level = 0;
  // A new model's calibration: the scores kept per target (0: the
  // server's, 2000) and adaptive conformal inference's step (< 0: the
  // server's, 0.005; 0: split conformal).
  std::uint32_t interval_window = 0;
  double interval_step = -1;
  std::uint64_t seed = 0;
  // Any field of the model's v1::Tuning, name=value (tuning_flag.h); over
  // the flags above.
  std::vector<std::string> tuning;
};

// What `streamreg bench predict | learn | plot` measure and draw.
struct BenchOptions {
  std::uint32_t concurrency = 4;     // predict: clients
  double duration = 10;              // seconds to measure (each phase)
  bool unary = false;                // predict: Predict and Ping (the default)
  bool stream = false;               // predict: PredictStream and PingStream
  std::uint32_t queries = 1;         // predict: queries per request
  std::uint32_t robots = 1;          // learn: simulated arms
  bool model_per_robot = false;      // learn: robot r into model NAME-r
  bool answer_when_durable = false;  // learn: the cautious mode
  // learn: each arm sends its samples this many ticks a message and asks
  // for its predictions ahead (0: a message a tick, answered in the tick)
  std::uint32_t batch_ticks = 0;
  std::uint32_t ahead_ticks = 20;  // learn: how far ahead, with batch_ticks
  std::uint32_t lead_ticks = 3;    // learn: the channel's lead_ticks
  int realtime_priority = 0;       // learn: the arms' SCHED_FIFO; 0 none
  std::uint32_t predictors = 0;    // learn: clients predicting meanwhile
  double predict_rate = 1000;      // learn: each predictor's queries/s
  double start_s = -1;             // the arms' start time; <0: a default
  double payload_kg = 2.0;         // learn: the payload's mass
  double payload_at = -1;          // learn: seconds in when it is picked up
  std::string plots;               // draw PNG plots into this folder
  double overload = 10;            // flood: offered load / capacity
  double calibrate = 5;            // flood: seconds measuring capacity
  int server_pid = 0;              // flood: sample this process's RSS
  double pause_at = -1;            // control: stop --server_pid this many s in
  double pause_for = 5;            // control: for this many seconds
  // control: the widest interval half width of a learned residual used
  double max_half_width_nm = 1e300;
};

// Everything a `streamreg` command was asked to do: cli_main.cc reads the
// flags once into this, and a command is a function of its options and a
// client (so that tests call commands directly).
struct CliOptions {
  std::string model;  // --model, or --name
  std::string csv;
  std::string out = "-";  // predict: the predictions' CSV (-: the output)
  // predict: the CSV's column names before predicted_<name> (target_<name>
  // for the prediction, no truth), for one release (PredictionsCsv).
  bool legacy_columns = false;
  // predict: the CSV of the samples each prediction used (empty: none).
  std::string neighbors_out;
  // predict: answer from a model that has learned at least this many
  // samples (PredictRequest.min_learned; unset: what the answering server
  // acknowledged).
  std::optional<std::uint64_t> min_learned;
  double rate = 1000;       // samples per second (bench learn: per robot)
  std::uint64_t limit = 0;  // at most this many rows (0: all)
  bool create = false;      // create the model from the CSV if missing
  // create: delete a model of the same name first (a rerun starts afresh).
  bool replace = false;
  // Match CSV columns to the model's inputs and targets by order, not name.
  bool by_position = false;
  std::string json;  // print JSON (info, metric) or write a report
  bool raw = false;  // info: the server's message as protobuf text
  std::uint64_t robot_seed = 1;
  SpecOptions spec;
  BenchOptions bench;
};

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_CLI_CLI_OPTIONS_H_
