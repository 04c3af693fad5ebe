#include "client/cli/csv_columns.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
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

// The columns of `wanted` names (target names: as target_<name> or <name>),
// in their order; the names not found go to `missing`.
std::vector<std::size_t> FindNamed(
    const CsvTable& table,
    const google::protobuf::RepeatedPtrField<std::string>& wanted,
    std::vector<std::string>* missing) {
  std::vector<std::size_t> found;
  for (const std::string& name : wanted) {
    absl::StatusOr<std::size_t> column = table.Find(name);
    if (column.ok()) {
      found.push_back(*column);
    } else {
      missing->push_back(name);
    }
  }
  return found;
}

// The names of `candidates` not among `matched`, appended to `unexpected`.
void NoteUnmatched(const CsvTable& table,
                   const std::vector<std::size_t>& candidates,
                   const std::vector<std::size_t>& matched,
                   std::vector<std::string>* unexpected) {
  for (std::size_t c : candidates) {
    if (std::find(matched.begin(), matched.end(), c) == matched.end()) {
      unexpected->push_back(table.columns()[c]);
    }
  }
}

absl::Status InputCountError(const CsvTable& table, std::size_t columns,
                             const v1::ModelSpec& spec) {
  return absl::InvalidArgumentError(absl::StrCat(
      table.path(), ": ", columns, " input columns, the model has ",
      spec.input_dim(), " inputs"));
}

absl::StatusOr<CsvColumns> MatchByPosition(const CsvTable& table,
                                           const v1::ModelSpec& spec,
                                           bool require_targets) {
  CsvColumns columns;
  absl::StatusOr<std::vector<std::size_t>> inputs = table.InputColumns({});
  if (!inputs.ok()) return inputs.status();
  columns.inputs = *std::move(inputs);
  columns.targets = TargetColumns(table);
  if (columns.inputs.size() != spec.input_dim()) {
    return InputCountError(table, columns.inputs.size(), spec);
  }
  if (columns.targets.empty() && !require_targets) return columns;
  const std::size_t m = spec.target_names_size();
  if (columns.targets.size() != m) {
    return absl::InvalidArgumentError(
        absl::StrCat(table.path(), ": ", columns.targets.size(),
                     " target_* columns, the model has ", m, " targets"));
  }
  return columns;
}

absl::StatusOr<CsvColumns> MatchByName(const CsvTable& table,
                                       const v1::ModelSpec& spec,
                                       bool require_targets) {
  const bool named_inputs =
      spec.input_names_size() == static_cast<int>(spec.input_dim());
  std::vector<std::string> missing;
  std::vector<std::string> unexpected;
  CsvColumns columns;
  absl::StatusOr<std::vector<std::size_t>> input_columns =
      table.InputColumns({});
  if (!input_columns.ok()) return input_columns.status();
  if (named_inputs) {
    columns.inputs = FindNamed(table, spec.input_names(), &missing);
    NoteUnmatched(table, *input_columns, columns.inputs, &unexpected);
  } else if (input_columns->size() == spec.input_dim()) {
    columns.inputs = *input_columns;  // nothing to match them by: in order
  } else {
    return InputCountError(table, input_columns->size(), spec);
  }
  const std::vector<std::size_t> target_columns = TargetColumns(table);
  if (require_targets || !target_columns.empty()) {
    columns.targets = FindNamed(table, spec.target_names(), &missing);
    NoteUnmatched(table, target_columns, columns.targets, &unexpected);
  }
  if (missing.empty() && unexpected.empty()) return columns;
  std::string problems;
  if (!missing.empty()) {
    absl::StrAppend(&problems, "missing ", absl::StrJoin(missing, ", "));
  }
  if (!unexpected.empty()) {
    absl::StrAppend(&problems, missing.empty() ? "" : "; ", "unexpected ",
                    absl::StrJoin(unexpected, ", "));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      table.path(), ": its columns are not the model's inputs and targets (",
      problems,
      "); rename them, or --by_position takes the input and "
      "target_* columns in their order"));
}

}  // namespace

absl::StatusOr<CsvColumns> MatchColumns(const CsvTable& table,
                                        const v1::ModelSpec& spec,
                                        bool require_targets,
                                        ColumnMatching matching) {
  return matching == ColumnMatching::kByPosition
             ? MatchByPosition(table, spec, require_targets)
             : MatchByName(table, spec, require_targets);
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
