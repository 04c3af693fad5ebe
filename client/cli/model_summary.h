#ifndef STREAMREG_CLIENT_CLI_MODEL_SUMMARY_H_
#define STREAMREG_CLIENT_CLI_MODEL_SUMMARY_H_

#include <string>

#include "absl/time/time.h"
#include "streamreg/v1/model.pb.h"

namespace streamreg {

// A model as `streamreg info` prints it for a person: what it learns and
// from how much (inputs, targets, metric, regressor, base, samples,
// memory), its creation and last snapshot as dates and ages from `now`,
// and per target how well it predicts (prequential and honest nMSE, the
// interval and its coverage) with what it chose (regressor, metric, k or
// bandwidth, base), then one line on what the two errors mean. Values not
// known yet are "-".
std::string ModelSummary(const v1::Model& model, absl::Time now);

// What `streamreg metric` says of an MLKR model's maps: their rank, as
// their spectrum shows it when some rows' directions carry nothing (an
// eigenvalue at most 1e-9 of the largest) — "maps of rank 19 (21 rows)" —
// or that there is none before the first fit.
std::string MlkrMapsSummary(const v1::MetricReport& report);

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_CLI_MODEL_SUMMARY_H_
