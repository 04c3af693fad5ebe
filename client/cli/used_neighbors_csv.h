#ifndef STREAMREG_CLIENT_CLI_USED_NEIGHBORS_CSV_H_
#define STREAMREG_CLIENT_CLI_USED_NEIGHBORS_CSV_H_

#include <span>
#include <string>

#include "absl/status/status.h"
#include "streamreg/v1/model.pb.h"
#include "streamreg/v1/regression.pb.h"

namespace streamreg {

// Writes the samples each prediction used (Prediction.used; streamreg
// predict --neighbors_out) to the CSV at `path`, one row per neighbour:
// row (the query's row in the input, from 0), target (its name), rank (0:
// the nearest), sample_id, distance, y (the neighbour's value of the
// target), then its inputs under the model's input names (x0.. without
// them).
absl::Status WriteUsedNeighborsCsv(const std::string& path,
                                   const v1::ModelSpec& spec,
                                   std::span<const v1::Prediction> predictions);

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_CLI_USED_NEIGHBORS_CSV_H_
