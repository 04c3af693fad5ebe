#ifndef STREAMREG_CLIENT_CLI_CSV_COLUMNS_H_
#define STREAMREG_CLIENT_CLI_CSV_COLUMNS_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/csv_table.h"
#include "streamreg/v1/model.pb.h"

namespace streamreg {

// Which CSV columns are a model's inputs and targets (the convention of
// data/README.md: target_* columns are targets, id_* ignored, the
// rest inputs). Inputs: the spec's input names if it has them, else every
// input column in order. Targets: target_<name> (or <name>) for each of the
// spec's target names if all exist, else every target column in order.
// Errors say what does not match.
struct CsvColumns {
  std::vector<std::size_t> inputs;
  std::vector<std::size_t> targets;  // empty when not required and absent
};
absl::StatusOr<CsvColumns> MatchColumns(const CsvTable& table,
                                        const v1::ModelSpec& spec,
                                        bool require_targets);

// A spec for the CSV's columns: its input columns as inputs (named), its
// target_* columns as targets (named without the prefix).
v1::ModelSpec SpecFromCsv(const CsvTable& table);

// The values of `columns` in `row`, appended to `out`.
void AppendRow(const CsvTable& table, std::size_t row,
               const std::vector<std::size_t>& columns,
               std::vector<double>* out);

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_CLI_CSV_COLUMNS_H_
