#ifndef STREAMREG_TESTS_SUPPORT_CUT_BYTES_H_
#define STREAMREG_TESTS_SUPPORT_CUT_BYTES_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"
#include "core/base/byte_coding.h"
#include "gtest/gtest.h"

namespace streamreg {

// Saved `bytes` cut short — nothing, a few bytes, half, all but the last —
// each loads as nothing through `load` (ByteReader& -> std::optional).
template <class Load>
void ExpectEveryCutLoadsAsNothing(const std::string& bytes, Load load) {
  for (const std::size_t cut :
       {std::size_t{0}, std::size_t{7}, bytes.size() / 2, bytes.size() - 1}) {
    ByteReader reader(absl::string_view(bytes).substr(0, cut));
    EXPECT_FALSE(load(reader).has_value()) << "cut at " << cut;
  }
}

}  // namespace streamreg

#endif  // STREAMREG_TESTS_SUPPORT_CUT_BYTES_H_
