#include "common/csv_table.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace streamreg {

absl::StatusOr<CsvTable> CsvTable::Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) return absl::DataLossError(absl::StrCat(path, ": read failed"));
  return Parse(contents.str(), path);
}

absl::StatusOr<CsvTable> CsvTable::Parse(absl::string_view contents,
                                         const std::string& path) {
  CsvTable table;
  table.path_ = path;
  std::string stem = path.substr(path.find_last_of('/') + 1);
  table.stem_ = stem.substr(0, stem.find('.'));
  std::vector<absl::string_view> lines = absl::StrSplit(contents, '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  if (lines.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": empty file"));
  }
  for (absl::string_view name : absl::StrSplit(lines[0], ',')) {
    table.columns_.emplace_back(absl::StripAsciiWhitespace(name));
  }
  for (std::size_t row = 2; row <= lines.size(); ++row) {
    const absl::string_view line = lines[row - 1];
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    const std::vector<absl::string_view> fields = absl::StrSplit(line, ',');
    if (fields.size() != table.columns_.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": line ", row, " has ", fields.size(),
                       " fields, the header ", table.columns_.size()));
    }
    for (std::size_t c = 0; c < fields.size(); ++c) {
      double value = 0.0;
      if (!absl::SimpleAtod(absl::StripAsciiWhitespace(fields[c]), &value)) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ": line ", row, " column ", table.columns_[c],
                         ": not a number: '", fields[c], "'"));
      }
      table.values_.push_back(value);
    }
  }
  if (table.values_.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": no data rows"));
  }
  return table;
}

absl::StatusOr<std::size_t> CsvTable::Find(absl::string_view name) const {
  for (const std::string& candidate :
       {std::string(name), absl::StrCat("target_", name)}) {
    const auto it = std::find(columns_.begin(), columns_.end(), candidate);
    if (it != columns_.end()) return it - columns_.begin();
  }
  return absl::NotFoundError(
      absl::StrCat(path_, ": no column '", name, "' or 'target_", name, "'"));
}

absl::StatusOr<std::vector<std::size_t>> CsvTable::InputColumns(
    const std::vector<std::string>& dropped) const {
  for (const std::string& name : dropped) {
    if (std::find(columns_.begin(), columns_.end(), name) == columns_.end()) {
      return absl::NotFoundError(
          absl::StrCat(path_, ": --drop names no column '", name, "'"));
    }
  }
  std::vector<std::size_t> inputs;
  for (std::size_t c = 0; c < columns_.size(); ++c) {
    const std::string& name = columns_[c];
    if (absl::StartsWith(name, "target_") || absl::StartsWith(name, "id_") ||
        std::find(dropped.begin(), dropped.end(), name) != dropped.end()) {
      continue;
    }
    inputs.push_back(c);
  }
  return inputs;
}

}  // namespace streamreg
