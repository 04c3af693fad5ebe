// ShellOrder against its definition computed by brute force: the result is
// a permutation of the input sorted by (first radius holding the neighbour,
// id), every ball is a prefix, and the order does not depend on the input's.
#include "core/index/shell_order.h"

#include <algorithm>
#include <random>
#include <tuple>
#include <vector>

#include "core/index/neighbor.h"
#include "gtest/gtest.h"

namespace streamreg {
namespace {

const std::vector<double> kRadii = {0.1, 0.2, 0.35, 0.5, 0.8};

// The first g with distance < radii[g]; radii.size() beyond them all.
std::size_t ShellOf(double distance) {
  std::size_t g = 0;
  while (g < kRadii.size() && !(distance < kRadii[g])) ++g;
  return g;
}

// Distinct ids up to `largest_id`, distances in [0, 1) with ties and some
// exactly on a radius.
std::vector<Neighbor> RandomNeighbors(std::size_t n, std::uint64_t largest_id,
                                      std::uint64_t seed) {
  std::mt19937_64 random(seed);
  std::uniform_int_distribution<std::uint64_t> id(0, largest_id);
  std::uniform_real_distribution<double> distance(0.0, 1.0);
  std::vector<Neighbor> neighbors;
  std::vector<std::uint64_t> used;
  while (neighbors.size() < n) {
    const std::uint64_t candidate = id(random);
    if (std::find(used.begin(), used.end(), candidate) != used.end()) continue;
    used.push_back(candidate);
    double d = distance(random);
    if (neighbors.size() % 7 == 0) d = kRadii[neighbors.size() % 5];
    if (neighbors.size() % 11 == 0 && !neighbors.empty()) {
      d = neighbors.front().distance;  // a tie
    }
    neighbors.push_back({candidate, d});
  }
  return neighbors;
}

void ExpectShellOrdered(const std::vector<Neighbor>& input,
                        const std::vector<Neighbor>& output,
                        const ShellOrder& order) {
  std::vector<Neighbor> expected = input;
  std::sort(expected.begin(), expected.end(),
            [](const Neighbor& a, const Neighbor& b) {
              return std::make_tuple(ShellOf(a.distance), a.id) <
                     std::make_tuple(ShellOf(b.distance), b.id);
            });
  ASSERT_EQ(output, expected);
  for (std::size_t g = 0; g < kRadii.size(); ++g) {
    const std::size_t within = static_cast<std::size_t>(std::count_if(
        input.begin(), input.end(),
        [&](const Neighbor& n) { return n.distance < kRadii[g]; }));
    ASSERT_EQ(order.CountWithin(g), within) << "radius " << g;
    for (std::size_t j = 0; j < output.size(); ++j) {
      ASSERT_EQ(j < within, output[j].distance < kRadii[g])
          << "ball " << g << " is not the prefix at " << j;
    }
  }
}

TEST(ShellOrderTest, SortsByShellThenIdAndEveryBallIsAPrefix) {
  ShellOrder order;
  // Small and large ids (one to four radix passes), empty and one-element
  // lists.
  for (std::uint64_t largest_id :
       {std::uint64_t{0}, std::uint64_t{200}, std::uint64_t{70000},
        std::uint64_t{1} << 40}) {
    for (std::size_t n : {0, 1, 2, 50, 3000}) {
      if (n > largest_id + 1) continue;
      SCOPED_TRACE(::testing::Message() << "n=" << n << " ids<=" << largest_id);
      const std::vector<Neighbor> input =
          RandomNeighbors(n, largest_id, n + largest_id);
      std::vector<Neighbor> output = input;
      order.Apply(kRadii, &output);
      ExpectShellOrdered(input, output, order);
    }
  }
}

TEST(ShellOrderTest, TheOrderDoesNotDependOnTheInputOrder) {
  const std::vector<Neighbor> input = RandomNeighbors(1000, 5000, 9);
  ShellOrder order;
  std::vector<Neighbor> first = input;
  order.Apply(kRadii, &first);
  std::mt19937_64 random(10);
  for (int round = 0; round < 5; ++round) {
    std::vector<Neighbor> shuffled = input;
    std::shuffle(shuffled.begin(), shuffled.end(), random);
    order.Apply(kRadii, &shuffled);
    EXPECT_EQ(shuffled, first);
  }
}

TEST(ShellOrderTest, WithoutRadiiItSortsById) {
  const std::vector<Neighbor> input = RandomNeighbors(500, 100000, 11);
  std::vector<Neighbor> expected = input;
  std::sort(expected.begin(), expected.end(),
            [](const Neighbor& a, const Neighbor& b) { return a.id < b.id; });
  std::vector<Neighbor> output = input;
  ShellOrder order;
  order.Apply({}, &output);
  EXPECT_EQ(output, expected);
}

}  // namespace
}  // namespace streamreg
