// IdNodeMap against a std::map under random operations on dense, nearly
// dense and arbitrary 64-bit ids; dense ids cost about 4 bytes each.

#include "core/index/id_node_map.h"

#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace streamreg {
namespace {

void ExpectSame(const IdNodeMap& map,
                const std::map<std::uint64_t, IdNodeMap::Node>& reference,
                const std::vector<std::uint64_t>& probes) {
  ASSERT_EQ(map.size(), reference.size());
  for (std::uint64_t id : probes) {
    const auto it = reference.find(id);
    EXPECT_EQ(map.Find(id),
              it == reference.end() ? IdNodeMap::kNone : it->second)
        << "id " << id;
  }
}

TEST(IdNodeMapTest, AgreesWithAMapUnderRandomOperations) {
  std::mt19937_64 random(7);
  IdNodeMap map;
  std::map<std::uint64_t, IdNodeMap::Node> reference;
  std::vector<std::uint64_t> ids;
  auto draw_id = [&]() -> std::uint64_t {
    switch (random() % 4) {
      case 0:
        return random();  // anywhere in 64 bits
      case 1:
        return random() % 50000;  // beyond the dense part at first
      default:
        return random() % (2 * reference.size() + 100);  // dense
    }
  };
  for (int step = 0; step < 60000; ++step) {
    const int op = static_cast<int>(random() % 10);
    if (op < 6 || reference.empty()) {
      const std::uint64_t id = draw_id();
      const auto node = static_cast<IdNodeMap::Node>(random() % 1000000);
      map.Set(id, node);  // inserts, or moves a present id
      reference[id] = node;
      ids.push_back(id);
    } else {
      const std::uint64_t id = ids[random() % ids.size()];
      if (reference.erase(id) == 1) map.Erase(id);
    }
  }
  std::vector<std::uint64_t> probes = ids;
  for (int i = 0; i < 2000; ++i) probes.push_back(draw_id());
  ExpectSame(map, reference, probes);

  map.RemapNodes([](IdNodeMap::Node node) { return node * 3 + 1; });
  for (auto& [id, node] : reference) node = node * 3 + 1;
  ExpectSame(map, reference, probes);
}

TEST(IdNodeMapTest, DenseIdsTakeFourBytesEach) {
  IdNodeMap map;
  constexpr std::size_t kIds = 1 << 20;
  for (std::uint64_t id = 0; id < kIds; ++id) {
    map.Set(id, static_cast<IdNodeMap::Node>(kIds - id));
  }
  EXPECT_EQ(map.size(), kIds);
  EXPECT_EQ(map.Find(12345), kIds - 12345);
  EXPECT_EQ(map.Find(kIds), IdNodeMap::kNone);
  EXPECT_LT(map.MemoryUsage(), kIds * 4 + 65536);
  // No insertion of a dense id ever needs a rehash.
  EXPECT_FALSE(map.WouldRehash(kIds));
}

TEST(IdNodeMapTest, TheSparseMapGrowsOnACopy) {
  IdNodeMap map;
  std::uint64_t id = std::uint64_t{1} << 40;
  for (int i = 0; i < 500; ++i, id += 977) {
    if (map.WouldRehash(id)) {
      IdNodeMap::SparseMap grown = map.SparseGrown();
      map.AdoptSparse(grown);
      EXPECT_FALSE(map.WouldRehash(id));
    }
    map.Set(id, static_cast<IdNodeMap::Node>(i));
  }
  EXPECT_EQ(map.size(), 500u);
  EXPECT_EQ(map.Find((std::uint64_t{1} << 40) + 977 * 499), 499u);
}

}  // namespace
}  // namespace streamreg
