#ifndef STREAMREG_COMMON_EXPONENTIAL_BACKOFF_H_
#define STREAMREG_COMMON_EXPONENTIAL_BACKOFF_H_

#include <algorithm>

#include "absl/time/time.h"

namespace streamreg {

// The longest pause before try number `tries` + 1 after `tries` failed
// ones (counted from 1): `first`, multiplied by `multiplier` for each
// failure after the first, at most `longest`. The clients' retries
// (RetryPolicy) and a cluster server's hosting (ClusterNode) pause a random
// part of it, so that callers that failed together do not retry together.
inline absl::Duration BackoffCeiling(int tries, absl::Duration first,
                                     absl::Duration longest,
                                     double multiplier) {
  absl::Duration ceiling = first;
  for (int i = 1; i < tries && ceiling < longest; ++i) {
    ceiling = ceiling * multiplier;
  }
  return std::min(ceiling, longest);
}

}  // namespace streamreg

#endif  // STREAMREG_COMMON_EXPONENTIAL_BACKOFF_H_
