#ifndef STREAMREG_COMMON_CSV_TABLE_H_
#define STREAMREG_COMMON_CSV_TABLE_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace streamreg {

// A numeric CSV file in the convention of data/README.md: a
// header row, then rows of numbers; columns named target_* are targets,
// id_* identifiers, every other column an input.
class CsvTable {
 public:
  static absl::StatusOr<CsvTable> Read(const std::string& path);
  // The table in `contents`, read from the file at `path` (named in
  // errors, and giving stem()). Lines end in "\n" (a "\r" before it is
  // whitespace).
  static absl::StatusOr<CsvTable> Parse(absl::string_view contents,
                                        const std::string& path);

  const std::vector<std::string>& columns() const { return columns_; }
  std::size_t num_rows() const { return values_.size() / columns_.size(); }
  double value(std::size_t row, std::size_t column) const {
    return values_[row * columns_.size() + column];
  }
  // The column called `name`, or `target_<name>`; NotFound otherwise.
  absl::StatusOr<std::size_t> Find(absl::string_view name) const;
  // The input columns: neither target_* nor id_* nor in `dropped` (names
  // that are not columns are an error).
  absl::StatusOr<std::vector<std::size_t>> InputColumns(
      const std::vector<std::string>& dropped) const;
  // The file's path as it was given, which errors name.
  const std::string& path() const { return path_; }
  // The file's name without directory and extension ("sarcos_test").
  const std::string& stem() const { return stem_; }

 private:
  std::string path_;
  std::string stem_;
  std::vector<std::string> columns_;
  std::vector<double> values_;  // row-major
};

}  // namespace streamreg

#endif  // STREAMREG_COMMON_CSV_TABLE_H_
