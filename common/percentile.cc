#include "common/percentile.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace streamreg {

double Percentile(std::vector<double> values, double q) {
  if (values.empty()) return 0.0;
  const double n = static_cast<double>(values.size());
  const std::size_t rank =
      std::min(values.size() - 1,
               static_cast<std::size_t>(std::max(1.0, std::ceil(q * n))) - 1);
  std::nth_element(values.begin(), values.begin() + rank, values.end());
  return values[rank];
}

}  // namespace streamreg
