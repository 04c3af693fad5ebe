#ifndef STREAMREG_CORE_METRIC_MLKR_FIT_EXCHANGE_H_
#define STREAMREG_CORE_METRIC_MLKR_FIT_EXCHANGE_H_

#include <cstdint>
#include <vector>

#include "core/metric/mlkr_map.h"

namespace streamreg {

// How the replicas of one model share its MLKR fits (docs/cluster.md, "MLKR
// fits computed once"). Every replica starts the same fit at the same
// sample count, over the same rows, and a fit is deterministic, so one
// replica's result is the others' bit for bit: one replica computes each
// fit as it starts and hands the result to the exchange; the others hold
// theirs back, take the result when it comes (MlkrRefresh::Offer), and
// compute it themselves only once their learner has reached the fit's
// take-over point without it (the computing replica gone or behind).
// Implemented by the server's cluster layer; called on a fit's thread.
class MlkrFitExchange {
 public:
  virtual ~MlkrFitExchange() = default;
  // Whether this replica computes each fit as it starts (else it holds it
  // back for the others' result).
  virtual bool ComputesFirst() const = 0;
  // The result of fit `fit` (the samples the model had seen when it
  // started), computed here, for the other replicas.
  virtual void Share(std::uint64_t fit, const std::vector<MlkrMap>& maps) = 0;
};

}  // namespace streamreg

#endif  // STREAMREG_CORE_METRIC_MLKR_FIT_EXCHANGE_H_
