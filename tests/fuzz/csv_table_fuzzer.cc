// Fuzzes the CSV reader (common/csv_table.h) that the CLI's ingest, replay
// and bench commands read data files with.
#include <cstddef>
#include <cstdint>

#include "absl/strings/match.h"
#include "common/csv_table.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  using streamreg::CsvTable;
  absl::StatusOr<CsvTable> table =
      CsvTable::Parse(streamreg::AsText(data, size), "fuzz/input.csv");
  if (!table.ok()) {
    // Errors name the file.
    FUZZ_CHECK(absl::StartsWith(table.status().message(), "fuzz/input.csv: "));
    return 0;
  }
  FUZZ_CHECK(table->stem() == "input");
  const std::size_t columns = table->columns().size();
  FUZZ_CHECK(columns >= 1 && table->num_rows() >= 1);
  // Every cell of every row can be read (ASan checks the bounds).
  double sum = 0.0;
  for (std::size_t row = 0; row < table->num_rows(); ++row) {
    for (std::size_t column = 0; column < columns; ++column) {
      sum += table->value(row, column);
    }
  }
  static_cast<void>(sum);
  // Each column is found by its name (at its first occurrence).
  for (std::size_t column = 0; column < columns; ++column) {
    absl::StatusOr<std::size_t> found = table->Find(table->columns()[column]);
    FUZZ_CHECK(found.ok() && *found <= column &&
               table->columns()[*found] == table->columns()[column]);
  }
  absl::StatusOr<std::vector<std::size_t>> inputs = table->InputColumns({});
  FUZZ_CHECK(inputs.ok());
  for (std::size_t column : *inputs) FUZZ_CHECK(column < columns);
  return 0;
}
