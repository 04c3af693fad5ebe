#include "core/index/rows_within.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "core/base/vector_lanes.h"
#include "core/index/euclidean_distance.h"
#include "gtest/gtest.h"

namespace streamreg {
namespace {

// Rows of mixed scales around the query, so that the early stop and the
// limit fall at every kind of place.
struct Block {
  Block(std::size_t count, std::size_t dim, std::uint64_t seed)
      : dim(dim), coordinates(count * dim), ids(count), query(dim) {
    std::mt19937_64 random(seed);
    std::normal_distribution<double> normal;
    for (double& q : query) q = normal(random);
    for (std::size_t j = 0; j < count; ++j) {
      ids[j] = 1000 + 7 * j;
      const double scale = std::ldexp(1.0, static_cast<int>(j % 7) - 3);
      for (std::size_t i = 0; i < dim; ++i) {
        coordinates[j * dim + i] = query[i] + scale * normal(random);
      }
    }
  }
  PointRows Rows() const {
    return {coordinates.data(), ids.data(), ids.size(), dim};
  }
  std::size_t dim;
  std::vector<double> coordinates;
  std::vector<std::uint64_t> ids;
  std::vector<double> query;
};

// Every row whose EuclideanDistance is at most `limit`, in the rows' order.
std::vector<Neighbor> BruteForce(const Block& block, double limit) {
  std::vector<Neighbor> within;
  for (std::size_t j = 0; j < block.ids.size(); ++j) {
    const double distance =
        EuclideanDistance(block.query.data(),
                          block.coordinates.data() + j * block.dim, block.dim);
    if (distance <= limit) within.push_back({block.ids[j], distance});
  }
  return within;
}

using Scan = void (*)(const double*, const PointRows&, double,
                      std::vector<Neighbor>*);

void ExpectTheBruteForceRows(Scan scan) {
  for (std::size_t dim : {1, 2, 3, 4, 5, 7, 8, 9, 12, 16, 21, 25}) {
    // 203 rows: groups of four and three rows measured alone.
    const Block block(203, dim, dim);
    // Limits that keep none, some and all, and one exactly a row's
    // distance (which is kept).
    const double exact = EuclideanDistance(
        block.query.data(), block.coordinates.data() + 5 * dim, dim);
    for (double limit : {0.0, 0.1, 0.5, exact, 1.0, 4.0, 1e9}) {
      std::vector<Neighbor> got = {{1, 0.0}};  // appended to, not replaced
      scan(block.query.data(), block.Rows(), limit, &got);
      std::vector<Neighbor> want = {{1, 0.0}};
      for (const Neighbor& n : BruteForce(block, limit)) want.push_back(n);
      ASSERT_EQ(got, want) << "dim " << dim << ", limit " << limit;
    }
  }
}

TEST(RowsWithinTest, AppendsEveryRowWithinTheLimitAtItsExactDistance) {
  ExpectTheBruteForceRows(&AppendRowsWithin);
  ExpectTheBruteForceRows(&AppendRowsWithinPortable);
}

TEST(RowsWithinTest, Avx2GivesTheSameAnswerAsSse2) {
  if (!RunsAvx2()) GTEST_SKIP() << "no AVX2 here, or STREAMREG_NO_AVX2 set";
  ExpectTheBruteForceRows(&AppendRowsWithinAvx2);
}

}  // namespace
}  // namespace streamreg
