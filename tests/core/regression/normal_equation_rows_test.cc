#include "core/regression/normal_equation_rows.h"

#include <cstddef>
#include <random>
#include <vector>

#include "core/base/vector_lanes.h"
#include "gtest/gtest.h"

namespace streamreg {
namespace {

// Design rows and targets with strides wider than a row, as a neighbour
// list holds them.
struct Rows {
  Rows(std::size_t count, std::size_t d, std::size_t m, std::uint64_t seed)
      : d(d), m(m), offsets(count * (d + 3)), targets(count * (m + 1)) {
    std::mt19937_64 random(seed);
    std::normal_distribution<double> normal;
    for (double& v : offsets) v = normal(random);
    for (double& y : targets) y = 10.0 * normal(random) + 3.0;
  }
  NormalEquationRows From(std::size_t first, std::size_t count) const {
    return {.offsets = offsets.data() + first * (d + 3),
            .offset_stride = d + 3,
            .targets = targets.data() + first * (m + 1),
            .target_stride = m + 1,
            .rows = count};
  }
  std::size_t d, m;
  std::vector<double> offsets;
  std::vector<double> targets;
};

// The sums as written: row by row, each product added to its entry in turn.
void ReferenceSums(const NormalEquationRows& rows, std::size_t d, std::size_t m,
                   std::vector<double>* gram, std::vector<double>* cross) {
  const std::size_t n = d + 1;
  for (std::size_t r = 0; r < rows.rows; ++r) {
    const double* v = rows.offsets + r * rows.offset_stride;
    const double* y = rows.targets + r * rows.target_stride;
    for (std::size_t i = 0; i <= d; ++i) {
      const double vi = i < d ? v[i] : 1.0;
      for (std::size_t j = 0; j <= i; ++j) {
        const double vj = j < d ? v[j] : 1.0;
        (*gram)[i * n + j] += i < d ? vi * vj : vj;
      }
      for (std::size_t t = 0; t < m; ++t) {
        (*cross)[i * m + t] += i < d ? vi * y[t] : y[t];
      }
    }
  }
}

// Lower triangle (the part the equations read) and C, to the bit.
void ExpectSameSums(const std::vector<double>& gram,
                    const std::vector<double>& cross,
                    const std::vector<double>& want_gram,
                    const std::vector<double>& want_cross, std::size_t d) {
  const std::size_t n = d + 1;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j <= i; ++j) {
      ASSERT_EQ(gram[i * n + j], want_gram[i * n + j])
          << "G(" << i << ", " << j << ") of d = " << d;
    }
  }
  for (std::size_t e = 0; e < cross.size(); ++e) {
    ASSERT_EQ(cross[e], want_cross[e]) << "C entry " << e << " of d = " << d;
  }
}

using AddFunction = void (*)(const NormalEquationRows&, std::size_t,
                             std::size_t, double*, double*);

void ExpectTheReferenceSums(AddFunction add) {
  for (std::size_t d : {1, 2, 3, 4, 5, 7, 8, 9, 13, 21}) {
    for (std::size_t m : {1, 3, 4, 7, 14}) {
      const Rows rows(23, d, m, 100 * d + m);
      const std::size_t n = d + 1;
      // Sums already under way, as when a prefix's fit is extended.
      std::vector<double> gram(n * n, 0.25), cross(n * m, -1.5);
      std::vector<double> want_gram = gram, want_cross = cross;
      add(rows.From(0, 23), d, m, gram.data(), cross.data());
      ReferenceSums(rows.From(0, 23), d, m, &want_gram, &want_cross);
      ExpectSameSums(gram, cross, want_gram, want_cross, d);
    }
  }
}

TEST(NormalEquationRowsTest, EachEntryIsTheRowsProductsAddedInTheirOrder) {
  ExpectTheReferenceSums(&AddNormalEquationRows);
  ExpectTheReferenceSums(&AddNormalEquationRowsPortable);
}

TEST(NormalEquationRowsTest, Avx2GivesTheSameBitsAsSse2) {
  if (!RunsAvx2()) GTEST_SKIP() << "no AVX2 here, or STREAMREG_NO_AVX2 set";
  ExpectTheReferenceSums(&AddNormalEquationRowsAvx2);
}

TEST(NormalEquationRowsTest, RowsInBatchesSumAsInOne) {
  const std::size_t d = 21, m = 14, n = d + 1;
  const Rows rows(64, d, m, 7);
  std::vector<double> whole_gram(n * n, 0.0), whole_cross(n * m, 0.0);
  AddNormalEquationRows(rows.From(0, 64), d, m, whole_gram.data(),
                        whole_cross.data());
  std::vector<double> gram(n * n, 0.0), cross(n * m, 0.0);
  // Batches of 5, 1, 10 and 48 rows: the blocks of four fall elsewhere.
  std::size_t first = 0;
  for (std::size_t count : {5, 1, 10, 48}) {
    AddNormalEquationRows(rows.From(first, count), d, m, gram.data(),
                          cross.data());
    first += count;
  }
  ExpectSameSums(gram, cross, whole_gram, whole_cross, d);
}

}  // namespace
}  // namespace streamreg
