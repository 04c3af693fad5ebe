#ifndef STREAMREG_CORE_MODEL_RANDOM_FEATURE_FIT_H_
#define STREAMREG_CORE_MODEL_RANDOM_FEATURE_FIT_H_

#include <cstddef>
#include <optional>

#include "core/base/byte_coding.h"
#include "core/metric/metric_transform.h"
#include "core/regression/random_feature_ridge.h"

namespace streamreg {

// A random-feature ridge and the coordinates it learns in (raw x ->
// `transform` -> the ridge's z): what a model's random-feature base uses
// and what its background rebuild makes (RandomFeatureBase,
// RandomFeatureRefresh).
struct RandomFeatureFit {
  MetricTransform transform;
  RandomFeatureRidge ridge;

  // The exact fit, for snapshots; Load yields nothing for a malformed one
  // or one of other dimensions.
  void Save(ByteWriter& out) const;
  static std::optional<RandomFeatureFit> Load(
      ByteReader& in, std::size_t dim, std::size_t num_targets,
      RidgeFormat format = RidgeFormat::kSums);
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_MODEL_RANDOM_FEATURE_FIT_H_
