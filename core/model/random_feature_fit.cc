#include "core/model/random_feature_fit.h"

#include <utility>

namespace streamreg {

void RandomFeatureFit::Save(ByteWriter& out) const {
  transform.Save(out);
  ridge.Save(out);
}

std::optional<RandomFeatureFit> RandomFeatureFit::Load(ByteReader& in,
                                                       std::size_t dim,
                                                       std::size_t num_targets,
                                                       RidgeFormat format) {
  std::optional<MetricTransform> transform = MetricTransform::Load(in, dim);
  if (!transform.has_value()) return std::nullopt;
  std::optional<RandomFeatureRidge> ridge =
      RandomFeatureRidge::Read(in, format);
  if (!ridge.has_value() || ridge->dim() != transform->dim() ||
      ridge->num_targets() != num_targets) {
    return std::nullopt;
  }
  return RandomFeatureFit{*std::move(transform), *std::move(ridge)};
}

}  // namespace streamreg
