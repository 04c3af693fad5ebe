#ifndef STREAMREG_TESTS_MODEL_TEST_SUPPORT_H_
#define STREAMREG_TESTS_MODEL_TEST_SUPPORT_H_

// A synthetic stream and model helpers shared by the engine's tests.
#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <span>
#include <vector>

#include "core/model.h"
#include "gtest/gtest.h"

namespace streamreg {

constexpr std::size_t kDim = 3;
constexpr std::size_t kTargets = 2;

struct Stream {
  std::vector<double> x, y;
  std::size_t size() const { return y.size() / kTargets; }
  Sample sample(std::size_t s) const {
    return Sample{{x.data() + s * kDim, kDim},
                  {y.data() + s * kTargets, kTargets},
                  1000 + s};
  }
  std::span<const double> input(std::size_t s) const {
    return {x.data() + s * kDim, kDim};
  }
};

// y_1 = sin(2 x_1) + x_2 / 2, y_2 = 5 x_3^2 + noise; x_3 has a larger
// scale, so standardization matters.
inline Stream MakeStream(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  Stream s;
  for (std::size_t i = 0; i < n; ++i) {
    const double a = uniform(random), b = uniform(random),
                 c = 10.0 * uniform(random);
    s.x.insert(s.x.end(), {a, b, c});
    s.y.push_back(std::sin(2 * a) + b / 2);
    s.y.push_back(0.05 * c * c + 0.1 * uniform(random));
  }
  return s;
}

inline ModelConfig BaseConfig() {
  ModelConfig config;
  config.input_dim = kDim;
  config.target_names = {"first", "second"};
  return config;
}

inline std::unique_ptr<Model> MakeModel(const ModelConfig& config) {
  absl::StatusOr<std::unique_ptr<Model>> model = Model::Create(config);
  EXPECT_TRUE(model.ok()) << model.status();
  return *std::move(model);
}

inline void LearnAll(Model& model, const Stream& stream, std::size_t begin,
                     std::size_t end, std::size_t batch_size = 37) {
  std::vector<Sample> batch;
  for (std::size_t s = begin; s < end; s += batch_size) {
    batch.clear();
    for (std::size_t i = s; i < std::min(end, s + batch_size); ++i) {
      batch.push_back(stream.sample(i));
    }
    ASSERT_TRUE(model.Learn(batch).ok());
  }
}

}  // namespace streamreg

#endif  // STREAMREG_TESTS_MODEL_TEST_SUPPORT_H_
