#ifndef STREAMREG_COMMON_PERCENTILE_H_
#define STREAMREG_COMMON_PERCENTILE_H_

#include <vector>

namespace streamreg {

// The q-quantile of `values` by nearest rank: the smallest value with at
// least a share q of the values at or below it (q = 0: the smallest value,
// q = 1: the largest; 0 for no values). Every latency percentile the
// programs report comes from here. O(n) (selection, no full sort).
double Percentile(std::vector<double> values, double q);

}  // namespace streamreg

#endif  // STREAMREG_COMMON_PERCENTILE_H_
