// streamreg-robot-sim: the sensor stream of a simulated 7-joint arm (a
// Franka Emika Panda; see client/loadgen/panda_dynamics.h for the model and its
// sources) at 1 kHz: as CSV (data/README.md's column convention), or
// straight into a streamreg server's Learn call at a fixed rate, printing
// the prequential error and latency every second.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "client/lib/client.h"
#include "client/lib/learn_session.h"
#include "client/loadgen/robot_model.h"
#include "client/loadgen/robot_stream.h"
#include "client/tools/latency_recorder.h"
#include "client/tools/rate_ticker.h"
#include "client/tools/security_flags.h"
#include "common/command_line.h"
#include "common/normalized_error.h"

ABSL_FLAG(std::uint64_t, samples, 0, "samples to produce (0: endless)");
ABSL_FLAG(std::string, out, "", "CSV file to write (default: stdout)");
ABSL_FLAG(std::uint64_t, seed, 1, "the task (trajectory) seed");
ABSL_FLAG(std::uint64_t, noise_seed, 1, "the sensor noise's seed");
ABSL_FLAG(double, start_s, 0, "seconds into the motion to start from");
ABSL_FLAG(double, sample_rate, 1000, "the arm's sample rate (Hz)");
ABSL_FLAG(double, position_noise, 1e-4, "encoder noise sd (rad)");
ABSL_FLAG(double, velocity_noise, 2e-3, "velocity noise sd (rad/s)");
ABSL_FLAG(double, acceleration_noise, 0.05, "acceleration noise sd (rad/s²)");
ABSL_FLAG(double, torque_noise, 0.05, "torque sensor noise sd (N·m)");
ABSL_FLAG(double, payload_kg, 2.0, "the payload picked up at --payload_at");
ABSL_FLAG(std::int64_t, payload_at, -1,
          "the sample (counted from the first one written) from which the arm "
          "holds the payload (negative: never)");
ABSL_FLAG(std::string, server, "", "stream into this server's Learn call");
ABSL_FLAG(std::string, model, "", "with --server: the model to learn");
ABSL_FLAG(double, rate, 0,
          "with --server: samples sent per second (default: --sample_rate)");
ABSL_FLAG(bool, create, false,
          "with --server: create the model (GW metric) if it does not exist");

namespace streamreg {
namespace {

CommandUsage Usage() {
  return {
      .name = "streamreg-robot-sim",
      .synopsis =
          "[--samples N] [--out FILE] | --server HOST:PORT --model "
          "NAME [--rate HZ] [--create] [flags]",
      .summary =
          "A simulated Franka Emika Panda arm (7 joints, inverse dynamics by "
          "recursive Newton-Euler with Orocos KDL, parameters of Gaz et al., "
          "IEEE RA-L 2019) following smooth random joint trajectories, with "
          "sensor noise and an optional payload. Writes CSV (columns q1..q7, "
          "qd1..qd7, qdd1..qdd7, target_tau1..target_tau7) or, with "
          "--server, streams every sample into the model's Learn call.",
      .flags = FlagsDefinedIn({"client/loadgen/robot_sim_main.cc"}),
      .shared_flags_heading = "Connection flags (with --server)",
      .shared_flags = FlagsDefinedIn({"client/tools/security_flags.cc"}),
      .examples = {"streamreg-robot-sim --samples 100000 --out arm.csv",
                   "streamreg-robot-sim --server 127.0.0.1:50051 --model arm "
                   "--create --rate 1000 --samples 60000"},
  };
}

RobotStreamOptions OptionsFromFlags() {
  RobotStreamOptions options;
  options.seed = absl::GetFlag(FLAGS_seed);
  options.sample_rate_hz = absl::GetFlag(FLAGS_sample_rate);
  options.noise_seed = absl::GetFlag(FLAGS_noise_seed);
  options.start_tick = static_cast<std::uint64_t>(
      std::max(0.0, absl::GetFlag(FLAGS_start_s)) * options.sample_rate_hz);
  options.noise.position_rad = absl::GetFlag(FLAGS_position_noise);
  options.noise.velocity_rad_s = absl::GetFlag(FLAGS_velocity_noise);
  options.noise.acceleration_rad_s2 = absl::GetFlag(FLAGS_acceleration_noise);
  options.noise.torque_nm = absl::GetFlag(FLAGS_torque_noise);
  if (absl::GetFlag(FLAGS_payload_at) >= 0) {
    options.payload_from_tick =
        options.start_tick +
        static_cast<std::uint64_t>(absl::GetFlag(FLAGS_payload_at));
    options.payload.mass_kg = absl::GetFlag(FLAGS_payload_kg);
  }
  return options;
}

std::uint64_t SampleLimit() {
  const std::uint64_t samples = absl::GetFlag(FLAGS_samples);
  return samples == 0 ? std::numeric_limits<std::uint64_t>::max() : samples;
}

absl::Status WriteCsv(RobotStream& robot) {
  std::ofstream file;
  const std::string path = absl::GetFlag(FLAGS_out);
  if (!path.empty()) {
    file.open(path);
    if (!file) return absl::UnavailableError("--out: cannot write " + path);
  }
  std::ostream& out = path.empty() ? std::cout : file;
  out << absl::StrJoin(RobotStream::ColumnNames(), ",") << "\n";
  const std::uint64_t limit = SampleLimit();
  char number[32];
  for (std::uint64_t s = 0; s < limit && out; ++s) {
    const RobotSample sample = robot.Next();
    std::string line;
    for (double v : sample.x) {
      absl::StrAppend(
          &line, line.empty() ? "" : ",",
          absl::string_view(number,
                            absl::SNPrintF(number, sizeof(number), "%.9g", v)));
    }
    for (double v : sample.y) {
      absl::StrAppend(
          &line, ",",
          absl::string_view(number,
                            absl::SNPrintF(number, sizeof(number), "%.9g", v)));
    }
    out << line << "\n";
  }
  out.flush();
  if (!out) return absl::UnavailableError("writing the CSV failed");
  return absl::OkStatus();
}

absl::Status StreamToServer(RobotStream& robot) {
  const std::string model = absl::GetFlag(FLAGS_model);
  if (model.empty()) return UsageError("--model: empty");
  const double rate = absl::GetFlag(FLAGS_rate) > 0
                          ? absl::GetFlag(FLAGS_rate)
                          : absl::GetFlag(FLAGS_sample_rate);
  ClientOptions client_options;
  client_options.address = absl::GetFlag(FLAGS_server);
  if (absl::Status status = ApplySecurityFlags(&client_options); !status.ok()) {
    return status;
  }
  Client client(client_options);
  if (absl::GetFlag(FLAGS_create)) {
    // The server's default configuration.
    const v1::ModelSpec spec;
    if (absl::Status status =
            CreateModelIfAbsent(client, model, RobotModelSpec(spec));
        !status.ok()) {
      return status;
    }
  }
  std::printf(
      "each second: answers' nMSE, the error of the predictions the Learn "
      "answers carried, each against its own sample, since the start (and "
      "over the last second), as `streamreg info` counts it in its answers "
      "column; at %.0f Hz the ticks before a sample are near copies of it, "
      "so it is lower than on states not seen yet (info's honest column); "
      "late_ticks: samples sent more than one period (%.2f ms) after their "
      "tick was due\n",
      rate, 1e3 / rate);
  std::unique_ptr<LearnSession> session = client.StartLearn(model);
  NormalizedError error(kRobotTargets);
  LatencyRecorder window;
  RateTicker ticker(rate);
  absl::Time next_report = ticker.start() + absl::Seconds(1);
  const std::uint64_t limit = SampleLimit();
  for (std::uint64_t s = 0; s < limit; ++s) {
    ticker.Wait();
    const RobotSample sample = robot.Next();
    const absl::Time sent = absl::Now();
    absl::StatusOr<v1::LearnResponse> response =
        session->Learn(sample.x, sample.y);
    if (!response.ok()) return response.status();
    window.Add(absl::Now() - sent);
    error.Add(PredictedValues(response->prediction()), sample.y);
    if (absl::Now() >= next_report || s + 1 == limit) {
      std::printf(
          "t=%6.1fs samples=%llu (durable: %llu, model learned: %llu) "
          "answers' nMSE=%.4f (last second %.4f) latency_us p50=%.0f "
          "p99=%.0f "
          "late_ticks=%llu%s\n",
          absl::ToDoubleSeconds(absl::Now() - ticker.start()),
          static_cast<unsigned long long>(s + 1),
          static_cast<unsigned long long>(session->durable_samples()),
          static_cast<unsigned long long>(response->learned()),
          error.MeanNmse(), error.WindowMeanNmse(),
          window.PercentileMicros(0.5), window.PercentileMicros(0.99),
          static_cast<unsigned long long>(ticker.late_ticks()),
          robot.carrying_payload() ? " [payload]" : "");
      std::fflush(stdout);
      window.Clear();
      error.StartWindow();
      next_report += absl::Seconds(1);
    }
  }
  // Closed once the server reports every sample durable.
  if (absl::Status status = session->Close(); !status.ok()) return status;
  std::printf("done: samples=%llu durable=%llu\n",
              static_cast<unsigned long long>(limit),
              static_cast<unsigned long long>(session->durable_samples()));
  return absl::OkStatus();
}

int Run() {
  if (!(absl::GetFlag(FLAGS_sample_rate) > 0)) {
    std::fprintf(stderr, "streamreg-robot-sim: --sample_rate: must be > 0\n");
    return 2;
  }
  RobotStream robot(OptionsFromFlags());
  const absl::Status status = absl::GetFlag(FLAGS_server).empty()
                                  ? WriteCsv(robot)
                                  : StreamToServer(robot);
  return status.ok() ? 0 : ReportFailure("streamreg-robot-sim", status);
}

}  // namespace
}  // namespace streamreg

int main(int argc, char** argv) {
  streamreg::ParseFlagsOnly(argc, argv, streamreg::Usage());
  return streamreg::Run();
}
