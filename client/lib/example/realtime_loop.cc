// A 1 kHz control loop that never waits for the server: each tick reads
// the torque the model predicted ahead for the tick's desired state (its
// rigid-body guess when none came in time) and hands over the state it
// measured, the torque it took, and the desired states of the ticks ahead
// (RealtimeChannel). Nothing in the loop locks, allocates or waits.
// usage: realtime_loop [ADDRESS] [TICKS]   (ADDRESS: host:port or unix:PATH)
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "client/lib/client.h"
#include "client/lib/realtime_channel.h"

namespace {

constexpr int kHorizon = 20;

// A two-joint arm's desired state at tick i: angles, velocities.
void StateAt(int i, double* x) {
  const double t = i * 0.001;
  x[0] = std::sin(3 * t);
  x[1] = std::cos(2 * t);
  x[2] = 3 * std::cos(3 * t);
  x[3] = -2 * std::sin(2 * t);
}

// The torque the arm takes at state x (what the model learns), and the
// rigid-body guess a controller falls back on (half the second link).
double TorqueAt(const double* x) {
  return 9.81 * (std::sin(x[0]) + 0.5 * std::sin(x[0] + x[1]));
}
double RigidBodyGuess(const double* x) { return 9.81 * std::sin(x[0]); }

}  // namespace

int main(int argc, char** argv) {
  streamreg::Client client({.address = argc > 1 ? argv[1] : "127.0.0.1:50051"});
  streamreg::v1::ModelSpec spec;
  spec.set_input_dim(4);
  spec.add_target_names("torque");
  if (auto made = client.CreateModel("arm-realtime", spec);
      !made.ok() && made.status().code() != absl::StatusCode::kAlreadyExists) {
    std::fprintf(stderr, "%s\n", made.status().ToString().c_str());
    return 1;
  }
  streamreg::RealtimeChannelOptions options;
  options.inputs = 4;
  options.targets = 1;
  options.horizon = kHorizon;
  streamreg::RealtimeChannel channel(&client, "arm-realtime", options);
  const int ticks = argc > 2 ? std::stoi(argv[2]) : 2000;
  // Every buffer the loop uses, made before it starts.
  std::vector<double> desired(kHorizon * 4);
  double x[4], y[1], feedforward[1], fallback[1];
  int predicted = 0;
  double sum = 0, squares = 0, errors = 0;  // over the second half
  auto tick = std::chrono::steady_clock::now();
  for (int i = 0; i < ticks; ++i, tick += std::chrono::milliseconds(1)) {
    StateAt(i, x);
    fallback[0] = RigidBodyGuess(x);
    const streamreg::RealtimeReading reading =
        channel.Read(i, feedforward, fallback);
    y[0] = TorqueAt(x);  // the arm, driven by feedforward + feedback
    for (int k = 0; k < kHorizon; ++k) StateAt(i + 1 + k, &desired[4 * k]);
    channel.Hand(i, x, y, desired);
    if (i >= ticks / 2 && reading.predicted()) {
      ++predicted;
      errors += std::pow(feedforward[0] - y[0], 2);
      sum += y[0];
      squares += y[0] * y[0];
    }
    std::this_thread::sleep_until(tick);
  }
  const absl::Status durable = channel.Close();
  const double n = predicted;
  std::printf("%d ticks, %d of the second half's %d predicted, nMSE %.4f\n",
              ticks, predicted, ticks - ticks / 2,
              errors / n / (squares / n - (sum / n) * (sum / n)));
  return durable.ok() ? 0 : 1;
}
