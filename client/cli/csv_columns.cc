#include "client/cli/csv_columns.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace streamreg {
namespace {

std::vector<std::size_t> TargetColumns(const CsvTable& table) {
  std::vector<std::size_t> targets;
  for (std::size_t c = 0; c < table.columns().size(); ++c) {
    if (absl::StartsWith(table.columns()[c], "target_")) targets.push_back(c);
  }
  return targets;
}

}  // namespace

absl::StatusOr<CsvColumns> MatchColumns(const CsvTable& table,
                                        const v1::ModelSpec& spec,
                                        bool require_targets) {
  CsvColumns columns;
  const std::size_t d = spec.input_dim();
  if (spec.input_names_size() == static_cast<int>(d)) {
    for (const std::string& name : spec.input_names()) {
      absl::StatusOr<std::size_t> column = table.Find(name);
      if (!column.ok()) break;
      columns.inputs.push_back(*column);
    }
  }
  if (columns.inputs.size() != d) {
    absl::StatusOr<std::vector<std::size_t>> inputs = table.InputColumns({});
    if (!inputs.ok()) return inputs.status();
    columns.inputs = *std::move(inputs);
  }
  if (columns.inputs.size() != d) {
    return absl::InvalidArgumentError(
        absl::StrCat(table.stem(), ": ", columns.inputs.size(),
                     " input columns, the model has ", d, " inputs"));
  }
  for (const std::string& name : spec.target_names()) {
    absl::StatusOr<std::size_t> column = table.Find(name);
    if (!column.ok()) break;
    columns.targets.push_back(*column);
  }
  const std::size_t m = spec.target_names_size();
  if (columns.targets.size() != m) {
    columns.targets = TargetColumns(table);
  }
  if (columns.targets.empty() && !require_targets) return columns;
  if (columns.targets.size() != m) {
    return absl::InvalidArgumentError(
        absl::StrCat(table.stem(), ": ", columns.targets.size(),
                     " target_* columns, the model has ", m, " targets"));
  }
  return columns;
}

v1::ModelSpec SpecFromCsv(const CsvTable& table) {
  v1::ModelSpec spec;
  const absl::StatusOr<std::vector<std::size_t>> inputs =
      table.InputColumns({});
  for (std::size_t c : *inputs) spec.add_input_names(table.columns()[c]);
  spec.set_input_dim(spec.input_names_size());
  for (std::size_t c : TargetColumns(table)) {
    spec.add_target_names(
        std::string(absl::StripPrefix(table.columns()[c], "target_")));
  }
  return spec;
}

void AppendRow(const CsvTable& table, std::size_t row,
               const std::vector<std::size_t>& columns,
               std::vector<double>* out) {
  for (std::size_t c : columns) out->push_back(table.value(row, c));
}

}  // namespace streamreg
