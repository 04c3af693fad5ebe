#ifndef STREAMREG_CLIENT_CLI_CSV_COLUMNS_H_
#define STREAMREG_CLIENT_CLI_CSV_COLUMNS_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/csv_table.h"
#include "streamreg/v1/model.pb.h"

namespace streamreg {

// How a CSV's columns are matched to a model's inputs and targets.
enum class ColumnMatching {
  // By name: each of the model's input names is a column, each target name
  // a target_<name> (or <name>) column, and there are no other input or
  // target_* columns. A model without input names takes the input columns
  // in order (there is nothing to match).
  kByName,
  // By order (--by_position): the input columns in order are the inputs,
  // the target_* columns in order the targets; only their counts must
  // agree.
  kByPosition,
};

// Which CSV columns are a model's inputs and targets (the convention of
// data/README.md: target_* columns are targets, id_* ignored, the
// rest inputs). Without `require_targets` a CSV with no target_* column
// has no targets. A mismatch is InvalidArgument naming the missing and
// unexpected columns.
struct CsvColumns {
  std::vector<std::size_t> inputs;
  std::vector<std::size_t> targets;  // empty when not required and absent
};
absl::StatusOr<CsvColumns> MatchColumns(const CsvTable& table,
                                        const v1::ModelSpec& spec,
                                        bool require_targets,
                                        ColumnMatching matching);

// A spec for the CSV's columns: its input columns as inputs (named), its
// target_* columns as targets (named without the prefix).
v1::ModelSpec SpecFromCsv(const CsvTable& table);

// The values of `columns` in `row`, appended to `out`.
void AppendRow(const CsvTable& table, std::size_t row,
               const std::vector<std::size_t>& columns,
               std::vector<double>* out);

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_CLI_CSV_COLUMNS_H_
