// A 1 kHz control loop against a streamreg server: each tick sends a
// two-joint arm's state and the torque it took, and gets back the torque
// the model predicted for that state before learning it.
// usage: robot_loop [HOST:PORT] [TICKS]
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <thread>

#include "client/lib/client.h"
#include "client/lib/learn_session.h"

int main(int argc, char** argv) {
  streamreg::Client client({.address = argc > 1 ? argv[1] : "127.0.0.1:50051"});
  streamreg::v1::ModelSpec spec;
  spec.set_input_dim(4);  // two angles, two velocities
  spec.add_target_names("torque");
  spec.set_metric(streamreg::v1::METRIC_MLKR);  // the default, spelled out
  if (auto made = client.CreateModel("arm-cpp", spec);
      !made.ok() && made.status().code() != absl::StatusCode::kAlreadyExists) {
    std::fprintf(stderr, "%s\n", made.status().ToString().c_str());
    return 1;
  }
  auto session = client.StartLearn("arm-cpp");
  const int ticks = argc > 2 ? std::stoi(argv[2]) : 2000;
  double sum = 0, squares = 0, errors = 0;  // over the second half
  auto tick = std::chrono::steady_clock::now();
  for (int i = 0; i < ticks; ++i, tick += std::chrono::milliseconds(1)) {
    const double t = i * 0.001, q1 = std::sin(3 * t), q2 = std::cos(2 * t);
    const double x[] = {q1, q2, 3 * std::cos(3 * t), -2 * std::sin(2 * t)};
    const double y[] = {9.81 * (std::sin(q1) + 0.5 * std::sin(q1 + q2))};
    auto answer = session->Learn(x, y);  // the prediction, then learning
    if (!answer.ok()) {
      std::fprintf(stderr, "%s\n", answer.status().ToString().c_str());
      return 1;
    }
    if (i >= ticks / 2) {
      errors += std::pow(answer->prediction().y(0) - y[0], 2);
      sum += y[0];
      squares += y[0] * y[0];
    }
    std::this_thread::sleep_until(tick);
  }
  const double n = ticks - ticks / 2;
  std::printf("%d ticks, nMSE of the second half: %.4f\n", ticks,
              errors / n / (squares / n - (sum / n) * (sum / n)));
  return session->Close().ok() ? 0 : 1;
}
