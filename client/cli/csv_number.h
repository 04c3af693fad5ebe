#ifndef STREAMREG_CLIENT_CLI_CSV_NUMBER_H_
#define STREAMREG_CLIENT_CLI_CSV_NUMBER_H_

#include <array>
#include <charconv>
#include <string>

namespace streamreg {

// A number as the CLI's CSV files write it: the shortest text that reads
// back to the same double (34.661152, not 34.661152000000001).
inline std::string CsvNumber(double value) {
  std::array<char, 32> text;
  const std::to_chars_result written =
      std::to_chars(text.data(), text.data() + text.size(), value);
  return std::string(text.data(), written.ptr);
}

}  // namespace streamreg

#endif  // STREAMREG_CLIENT_CLI_CSV_NUMBER_H_
