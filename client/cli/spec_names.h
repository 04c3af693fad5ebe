#ifndef STREAMREG_CLIENT_CLI_SPEC_NAMES_H_
#define STREAMREG_CLIENT_CLI_SPEC_NAMES_H_

#include <span>
#include <utility>

#include "streamreg/v1/model.pb.h"

namespace streamreg {

// The CLI's names of the spec's enums, as its flags take them
// (--metric egop) and `info` prints them: one table for both.
template <class Enum>
using SpecNames = std::span<const std::pair<const char*, Enum>>;

inline constexpr std::pair<const char*, v1::Metric> kMetricNames[] = {
    {"euclidean", v1::METRIC_EUCLIDEAN}, {"gw", v1::METRIC_GRADIENT_WEIGHTS},
    {"egop", v1::METRIC_EGOP},           {"mlkr", v1::METRIC_MLKR},
    {"glml", v1::METRIC_GLML},           {"auto", v1::METRIC_AUTO}};
inline constexpr std::pair<const char*, v1::Regressor> kRegressorNames[] = {
    {"knn", v1::REGRESSOR_KNN},
    {"kernel", v1::REGRESSOR_KERNEL},
    {"local_linear", v1::REGRESSOR_LOCAL_LINEAR},
    {"auto", v1::REGRESSOR_AUTO}};
inline constexpr std::pair<const char*, v1::Kernel> kKernelNames[] = {
    {"box", v1::KERNEL_BOX},
    {"triangular", v1::KERNEL_TRIANGULAR},
    {"epanechnikov", v1::KERNEL_EPANECHNIKOV},
    {"gaussian", v1::KERNEL_GAUSSIAN}};

// The name of `value` in `names` ("?" if it has none).
template <class Enum>
const char* SpecName(SpecNames<Enum> names, Enum value) {
  for (const auto& [name, known] : names) {
    if (known == value) return name;
  }
  return "?";
}

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_CLI_SPEC_NAMES_H_
