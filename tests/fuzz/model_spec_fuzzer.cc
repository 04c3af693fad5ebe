// Fuzzes what CreateModel does with a ModelSpec from the wire: the spec is
// parsed from the input, converted and validated (ConfigFromSpec), and the
// hosted model made as the registry makes it. A spec that is accepted must
// round-trip (its spec in effect converts back to the same configuration),
// and the model it makes must learn and predict.
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "server/hosting/model_registry.h"
#include "server/hosting/worker_pool.h"
#include "server/rpc/spec_conversion.h"
#include "streamreg/v1/model.pb.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/registry_without_storage.h"

namespace streamreg {
namespace {

// Learns a few samples of a smooth function into `model` and predicts.
void LearnAndPredict(Model& model) {
  const ModelConfig& config = model.config();
  const std::size_t dim = config.input_dim;
  const std::size_t targets = config.target_names.size();
  std::mt19937_64 random(config.seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  constexpr std::size_t kSamples = 6;
  std::vector<double> x(kSamples * dim), y(kSamples * targets);
  for (double& value : x) value = uniform(random);
  for (std::size_t s = 0; s < kSamples; ++s) {
    for (std::size_t t = 0; t < targets; ++t) {
      y[s * targets + t] = x[s * dim] * static_cast<double>(t + 1);
    }
  }
  std::vector<Sample> samples;
  for (std::size_t s = 0; s < kSamples; ++s) {
    samples.push_back({{&x[s * dim], dim}, {&y[s * targets], targets}, s + 1});
  }
  FUZZ_CHECK(model.Learn(samples).ok());
  absl::StatusOr<Prediction> prediction = model.Predict({x.data(), dim});
  FUZZ_CHECK(prediction.ok());
  FUZZ_CHECK(prediction->value.size() == targets);
}

}  // namespace
}  // namespace streamreg

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  using namespace streamreg;
  const ModelRegistry* registry = &RegistryWithoutStorage();
  v1::ModelSpec spec;
  if (!spec.ParseFromArray(data, static_cast<int>(size))) return 0;
  absl::StatusOr<ModelConfig> config = ConfigFromSpec(spec);
  if (!config.ok()) {
    FUZZ_CHECK(config.status().code() == absl::StatusCode::kInvalidArgument);
    FUZZ_CHECK(absl::StartsWith(config.status().message(), "spec."));
    return 0;
  }
  // The spec in effect describes the same configuration.
  const v1::ModelSpec in_effect = SpecFromConfig(*config);
  absl::StatusOr<ModelConfig> again = ConfigFromSpec(in_effect);
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(SpecFromConfig(*again).SerializeAsString() ==
             in_effect.SerializeAsString());
  std::vector<std::string> input_names(spec.input_names().begin(),
                                       spec.input_names().end());
  absl::StatusOr<std::shared_ptr<HostedModel>> hosted = registry->Make(
      "fuzz", *config, std::move(input_names), absl::UnixEpoch());
  if (!hosted.ok()) {
    FUZZ_CHECK(absl::StartsWith(hosted.status().message(), "spec."));
    return 0;
  }
  // Only narrow models learn here: learning is cubic in input_dim for the
  // local linear regressor (a (d+1) x (d+1) solve per candidate k), which
  // at d = 429 takes 1.6 s for 6 samples optimized and over a minute under
  // the sanitizers. The code a wide model runs is the narrow one's.
  if (config->input_dim <= 32 && config->target_names.size() <= 8) {
    absl::StatusOr<std::unique_ptr<Model>> model = Model::Create(*config);
    FUZZ_CHECK(model.ok());
    LearnAndPredict(**model);
  }
  return 0;
}
