#ifndef STREAMREG_CLIENT_CLI_PREDICTIONS_CSV_H_
#define STREAMREG_CLIENT_CLI_PREDICTIONS_CSV_H_

#include <span>
#include <string>

#include "streamreg/v1/model.pb.h"
#include "streamreg/v1/regression.pb.h"

namespace streamreg {

// The columns of `streamreg predict`'s CSV (its --help, the README's first
// model), so that no column reads as another: per target, in these blocks, the
// truth under the target's own name (only when the input CSV had it), then
// predicted_<name>, lower_<name> and upper_<name> (the interval), and
// spread_<name>; with a random-feature base base_variance_<name>; last,
// neighbors. With `legacy` the names before them, for one release
// (--legacy_columns): target_<name> for the prediction, then spread_,
// lower_, upper_, base_variance_ and neighbors, and no truth.
class PredictionsCsv {
 public:
  PredictionsCsv(const v1::ModelSpec& spec, bool with_truth, bool legacy);

  // The header line, without its newline.
  std::string Header() const;
  // Prediction `p` as a line under it; `truth` (one value per target) is
  // written when the header has the truth, and ignored otherwise.
  std::string Row(const v1::Prediction& p, std::span<const double> truth) const;

 private:
  const v1::ModelSpec& spec_;
  const bool with_truth_;
  const bool legacy_;
};

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_CLI_PREDICTIONS_CSV_H_
