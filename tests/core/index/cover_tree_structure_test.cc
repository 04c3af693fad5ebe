// A cover tree's structure saved and read back (snapshots): the same tree
// without a single insertion, untouched by later changes to the original,
// and refused when the bytes or the supplied points do not fit it; and the
// changes made after a mark, which bring a structure saved at the mark up
// to date.

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "core/index/brute_force_search.h"
#include "core/index/cover_tree.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/synthetic_points.h"

namespace streamreg {
namespace {

using ::testing::HasSubstr;

// Where each id's point is (ids index the rows of a PointSet, several ids
// may share a row).
struct PointsById {
  const PointSet* points;
  std::vector<std::size_t> row_of_id;
  const double* operator()(std::uint64_t id) const {
    if (id >= row_of_id.size()) return nullptr;
    return points->point(row_of_id[id]).data();
  }
};

// The header, then the nodes in pieces of `piece` nodes.
struct Encoded {
  std::string header;
  std::vector<std::string> nodes;
};
Encoded Encode(const CoverTree::Structure& structure, std::size_t piece) {
  Encoded encoded;
  ByteWriter header(&encoded.header);
  structure.EncodeHeader(header);
  for (std::size_t first = 0; first < structure.node_slots(); first += piece) {
    std::string& bytes = encoded.nodes.emplace_back();
    ByteWriter out(&bytes);
    structure.EncodeNodes(first,
                          std::min(piece, structure.node_slots() - first), out);
  }
  return encoded;
}

// The changed nodes' header, then the nodes in pieces of `piece`.
Encoded EncodeChanges(const CoverTree::Changes& changes, std::size_t piece) {
  const std::vector<std::uint32_t> changed = changes.ChangedNodes();
  const std::span<const std::uint32_t> all(changed);
  Encoded encoded;
  ByteWriter header(&encoded.header);
  changes.EncodeHeader(all, header);
  for (std::size_t first = 0; first < all.size(); first += piece) {
    ByteWriter out(&encoded.nodes.emplace_back());
    changes.EncodeNodes(all.subspan(first, std::min(piece, all.size() - first)),
                        out);
  }
  return encoded;
}

bool ReadStructure(const Encoded& encoded, CoverTree::StructureReader& reader) {
  ByteReader header(encoded.header);
  if (!reader.ReadHeader(header)) return false;
  for (const std::string& bytes : encoded.nodes) {
    ByteReader in(bytes);
    if (!reader.ReadNodes(in)) return false;
  }
  return true;
}

bool ReadChanges(const Encoded& changes, CoverTree::StructureReader& reader) {
  ByteReader header(changes.header);
  if (!reader.ReadChangesHeader(header)) return false;
  for (const std::string& bytes : changes.nodes) {
    ByteReader in(bytes);
    if (!reader.ReadChangedNodes(in)) return false;
  }
  return true;
}

absl::StatusOr<CoverTree> Decode(std::size_t dim, const Encoded& encoded,
                                 const CoverTree::StructureReader::RowOf& point,
                                 std::optional<DiagonalMap> referencing = {}) {
  CoverTree::StructureReader reader(dim);
  if (!ReadStructure(encoded, reader)) {
    return absl::DataLossError("header or nodes");
  }
  return std::move(reader).Finish(point, std::move(referencing));
}

bool SameEncoding(const Encoded& a, const Encoded& b) {
  return a.header == b.header && a.nodes == b.nodes;
}

// A tree with every kind of node: grown one point at a time (so not in
// batch layout), duplicates sharing a node, removals leaving free slots,
// and points kept outside the tree (kScan from id 1650 on).
class StructureTest : public ::testing::Test {
 protected:
  static constexpr std::size_t kDim = 5;
  StructureTest() : points_(ClusteredPoints(1500, kDim, 6, 71)), tree_(kDim) {
    lookup_.points = &points_;
    for (std::uint64_t id = 0; id < 1800; ++id) {
      if (id == 1650) tree_.set_strategy(CoverTree::Strategy::kScan);
      // Ids 1500.. repeat the first 300 points.
      const std::size_t row = id < 1500 ? id : id - 1500;
      lookup_.row_of_id.push_back(row);
      EXPECT_TRUE(tree_.Insert(id, points_.point(row)).ok());
      brute_.Add(id, points_.point(row));
    }
    for (std::uint64_t id = 0; id < 1800; id += 11) {
      EXPECT_TRUE(tree_.Remove(id).ok());
      EXPECT_TRUE(brute_.Remove(id));
    }
  }

  void ExpectAnswersLikeBruteForce(const CoverTree& tree) {
    ASSERT_TRUE(tree.CheckInvariants().ok()) << tree.CheckInvariants();
    EXPECT_EQ(tree.size(), brute_.size());
    for (std::size_t q = 0; q < 1500; q += 37) {
      std::vector<Neighbor> knn, range;
      ASSERT_TRUE(tree.Knn(points_.point(q), 7, &knn).ok());
      EXPECT_EQ(knn, brute_.Knn(points_.point(q), 7)) << "query " << q;
      ASSERT_TRUE(tree.Range(points_.point(q), 0.3, &range).ok());
      EXPECT_EQ(range, brute_.Range(points_.point(q), 0.3)) << "query " << q;
    }
  }

  PointSet points_;
  CoverTree tree_;
  BruteForceSearch brute_{kDim};
  PointsById lookup_;
};

TEST_F(StructureTest, ReadBackIsTheSameTree) {
  ASSERT_GT(tree_.unindexed_count(), 0u);
  ASSERT_GT(tree_.node_count(), 0u);
  const Encoded saved = Encode(tree_.ShareStructure(), 100);
  absl::StatusOr<CoverTree> restored = Decode(kDim, saved, lookup_);
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_EQ(restored->node_count(), tree_.node_count());
  EXPECT_EQ(restored->unindexed_count(), tree_.unindexed_count());
  EXPECT_EQ(restored->root_level(), tree_.root_level());
  // Node for node, free slots and all.
  EXPECT_TRUE(SameEncoding(Encode(restored->ShareStructure(), 100), saved));
  ExpectAnswersLikeBruteForce(*restored);

  // It goes on like the original: the free slots are reused and the
  // duplicates leave one at a time.
  for (std::uint64_t id = 0; id < 1800; id += 11) {
    const std::size_t row = lookup_.row_of_id[id];
    ASSERT_TRUE(restored->Insert(id, points_.point(row)).ok());
    brute_.Add(id, points_.point(row));
  }
  for (std::uint64_t id = 1500; id < 1800; id += 2) {
    if (id % 11 == 0) continue;
    ASSERT_TRUE(restored->Remove(id).ok());
    ASSERT_TRUE(brute_.Remove(id));
  }
  ExpectAnswersLikeBruteForce(*restored);
}

TEST_F(StructureTest, AShareDoesNotSeeLaterChanges) {
  const CoverTree::Structure shared = tree_.ShareStructure();
  const Encoded at_share = Encode(shared, 4096);
  for (std::uint64_t id = 1; id < 1800; id += 5) {
    if (id % 11 != 0) {
      ASSERT_TRUE(tree_.Remove(id).ok());
    }
  }
  for (std::uint64_t id = 1800; id < 2300; ++id) {
    lookup_.row_of_id.push_back(id - 1800);
    ASSERT_TRUE(tree_.Insert(id, points_.point(id - 1800)).ok());
  }
  EXPECT_TRUE(SameEncoding(Encode(shared, 4096), at_share));
  EXPECT_FALSE(SameEncoding(Encode(tree_.ShareStructure(), 4096), at_share));
  ASSERT_TRUE(tree_.CheckInvariants().ok()) << tree_.CheckInvariants();
}

TEST_F(StructureTest, PointsThatDoNotFitAreRefused) {
  const Encoded saved = Encode(tree_.ShareStructure(), 4096);
  // Another point for one id: its parent distance no longer matches.
  PointsById moved = lookup_;
  moved.row_of_id[500] = 501;
  absl::StatusOr<CoverTree> tree = Decode(kDim, saved, moved);
  ASSERT_FALSE(tree.ok());
  EXPECT_EQ(tree.status().code(), absl::StatusCode::kInvalidArgument);
  // An id the caller does not know.
  PointsById shorter = lookup_;
  shorter.row_of_id.resize(1700);
  EXPECT_EQ(Decode(kDim, saved, shorter).status().code(),
            absl::StatusCode::kInvalidArgument);
  // A duplicate that is not where its node is.
  PointsById split = lookup_;
  split.row_of_id[1501] = 2;
  EXPECT_THAT(Decode(kDim, saved, split).status().message(),
              HasSubstr("is not at node"));
}

// Each field of a node, damaged, is caught (offsets within a node's 48
// bytes; the piece starts with first u64 and count u32).
TEST_F(StructureTest, DamagedNodesAreRefused) {
  const Encoded saved = Encode(tree_.ShareStructure(), 1 << 20);
  ASSERT_EQ(saved.nodes.size(), 1u);
  auto damaged = [&](std::size_t node, std::size_t offset,
                     std::uint32_t value) {
    Encoded copy = saved;
    std::memcpy(copy.nodes[0].data() + 12 + node * 48 + offset, &value,
                sizeof value);
    return Decode(kDim, copy, lookup_).status();
  };
  // Free, indexed and unindexed nodes alike.
  for (std::size_t node : {0u, 1u, 2u, 100u, 1000u}) {
    EXPECT_FALSE(damaged(node, 24, 1u << 30).ok()) << "parent of " << node;
    EXPECT_FALSE(damaged(node, 28, 1u << 30).ok()) << "child of " << node;
    EXPECT_FALSE(damaged(node, 36, 5000).ok()) << "level of " << node;
    EXPECT_FALSE(damaged(node, 40, 7).ok()) << "ids of " << node;
  }
  // A loop: a node its own next sibling.
  std::size_t looped = 0;
  for (std::size_t node = 0; node < 1500 && looped < 3; ++node) {
    std::uint32_t next;
    std::memcpy(&next, saved.nodes[0].data() + 12 + node * 48 + 32, 4);
    if (next == UINT32_MAX) continue;
    EXPECT_FALSE(damaged(node, 32, static_cast<std::uint32_t>(node)).ok());
    ++looped;
  }
  EXPECT_EQ(looped, 3u);
  // Missing and extra bytes.
  Encoded truncated = saved;
  truncated.nodes[0].pop_back();
  EXPECT_FALSE(Decode(kDim, truncated, lookup_).ok());
  Encoded missing = Encode(tree_.ShareStructure(), 100);
  missing.nodes.pop_back();
  EXPECT_THAT(Decode(kDim, missing, lookup_).status().message(),
              HasSubstr("nodes"));
  EXPECT_FALSE(Decode(kDim + 1, saved, lookup_).ok());
}

// Changes since a mark, applied to the structure saved at the mark, make
// the tree as it is now, node for node; in a chain, each applies to what
// the one before made, and to nothing else.
TEST_F(StructureTest, ChangesSinceAMarkBringItsStructureUpToDate) {
  const PointSet more = ClusteredPoints(600, kDim, 6, 72);
  // Ids 1800.. are new locations, at the rows of `more`.
  const auto row_of = [&](std::uint64_t id) -> const double* {
    if (id < 1800) return lookup_(id);
    return id < 2400 ? more.point(id - 1800).data() : nullptr;
  };
  const auto insert = [&](std::uint64_t id) {
    const std::span<const double> point(row_of(id), kDim);
    ASSERT_TRUE(tree_.Insert(id, point).ok());
    brute_.Add(id, point);
  };
  const Encoded saved = Encode(tree_.ShareStructure(), 4096);
  const CoverTree::ChangeMark first = tree_.MarkChanges();
  // New locations, removed ids back (in free slots) and, walking again,
  // points moved into the tree from outside it.
  tree_.set_strategy(CoverTree::Strategy::kTree);
  const std::size_t unindexed = tree_.unindexed_count();
  for (std::uint64_t id = 1800; id < 2100; ++id) insert(id);
  for (std::uint64_t id = 0; id < 1800; id += 33) insert(id);
  EXPECT_LT(tree_.unindexed_count(), unindexed);
  const std::optional<CoverTree::Changes> changes =
      tree_.ShareChangesSince(first);
  ASSERT_TRUE(changes.has_value());
  const Encoded at_second = Encode(tree_.ShareStructure(), 4096);
  const CoverTree::ChangeMark second = tree_.MarkChanges();
  // Then new points and removals (free slots, re-homed children).
  for (std::uint64_t id = 2100; id < 2400; ++id) insert(id);
  for (std::uint64_t id = 1; id < 1800; id += 13) {
    if (id % 11 == 0) continue;
    ASSERT_TRUE(tree_.Remove(id).ok());
    ASSERT_TRUE(brute_.Remove(id));
  }
  const std::optional<CoverTree::Changes> later =
      tree_.ShareChangesSince(second);
  ASSERT_TRUE(later.has_value());
  const Encoded now = Encode(tree_.ShareStructure(), 4096);
  // Shared at their moment: what came after does not show.
  const Encoded first_changes = EncodeChanges(*changes, 100);
  const Encoded second_changes = EncodeChanges(*later, 100);
  EXPECT_LT(later->ChangedNodes().size(), tree_.ShareStructure().node_slots());

  // The first changes: the tree at the second mark.
  CoverTree::StructureReader at_mark(kDim);
  ASSERT_TRUE(ReadStructure(saved, at_mark));
  ASSERT_TRUE(ReadChanges(first_changes, at_mark));
  EXPECT_TRUE(at_mark.complete());
  absl::StatusOr<CoverTree> read = std::move(at_mark).Finish(row_of);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_TRUE(SameEncoding(Encode(read->ShareStructure(), 4096), at_second));
  // Both: the tree now.
  CoverTree::StructureReader chain(kDim);
  ASSERT_TRUE(ReadStructure(saved, chain));
  ASSERT_TRUE(ReadChanges(first_changes, chain));
  ASSERT_TRUE(ReadChanges(second_changes, chain));
  EXPECT_EQ(chain.size(), tree_.size());
  read = std::move(chain).Finish(row_of);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_TRUE(SameEncoding(Encode(read->ShareStructure(), 4096), now));
  ExpectAnswersLikeBruteForce(*read);

  // Changes apply only to the structure of their mark.
  const auto refused = [&](const std::vector<const Encoded*>& links) {
    CoverTree::StructureReader reader(kDim);
    EXPECT_TRUE(ReadStructure(saved, reader));
    bool all_read = true;
    for (const Encoded* link : links) {
      all_read = all_read && ReadChanges(*link, reader);
    }
    EXPECT_FALSE(reader.complete());
    return !all_read && !std::move(reader).Finish(row_of).ok();
  };
  EXPECT_TRUE(refused({&second_changes}));
  EXPECT_TRUE(refused({&first_changes, &first_changes}));
  Encoded cut = first_changes;
  cut.nodes.back().pop_back();
  EXPECT_TRUE(refused({&cut}));
  Encoded reordered = first_changes;
  std::swap(reordered.nodes.front(), reordered.nodes.back());
  EXPECT_TRUE(refused({&reordered}));
  // A piece left out: never complete.
  Encoded short_of_one = first_changes;
  short_of_one.nodes.pop_back();
  CoverTree::StructureReader missing(kDim);
  ASSERT_TRUE(ReadStructure(saved, missing));
  ASSERT_TRUE(ReadChanges(short_of_one, missing));
  EXPECT_FALSE(missing.complete());
  EXPECT_FALSE(std::move(missing).Finish(row_of).ok());

  // A mark names its tree: none of another, a rebuilt or a restored one.
  EXPECT_FALSE(tree_.Rebuilt().ShareChangesSince(second).has_value());
  EXPECT_FALSE(read->ShareChangesSince(second).has_value());
  EXPECT_FALSE(tree_.ShareChangesSince(CoverTree::ChangeMark{}).has_value());
  // With nothing changed, changes of nothing.
  const CoverTree::ChangeMark quiet = tree_.MarkChanges();
  EXPECT_TRUE(tree_.ShareChangesSince(quiet)->ChangedNodes().empty());
}

// A tree that references rows (NodePoints) saves the same structure as one
// that owns the images of those rows, and reads back either way.
TEST(CoverTreeStructure, AReferencingTreeReadsBackReferencingTheRows) {
  constexpr std::size_t kDim = 4;
  const DiagonalMap map({1.0, -2.0, 0.0, 0.5}, {2.0, 0.5, 0.0, 8.0});
  const PointSet raw = ClusteredPoints(1200, kDim, 4, 91);
  PointSet images{kDim, std::vector<double>(raw.coordinates.size())};
  CoverTree referencing(map);
  CoverTree owning(kDim);
  // Always walking (the pruning monitors' measuring ticks are per thread,
  // so two trees grown side by side would measure different insertions).
  referencing.set_strategy(CoverTree::Strategy::kTree);
  owning.set_strategy(CoverTree::Strategy::kTree);
  BruteForceSearch brute(kDim);
  for (std::size_t i = 0; i < raw.size(); ++i) {
    map.Apply(raw.point(i).data(), images.coordinates.data() + i * kDim);
    ASSERT_TRUE(referencing.Insert(i, raw.point(i)).ok());
    ASSERT_TRUE(owning.Insert(i, images.point(i)).ok());
    brute.Add(i, images.point(i));
  }
  for (std::uint64_t id = 0; id < raw.size(); id += 7) {
    ASSERT_TRUE(referencing.Remove(id).ok());
    ASSERT_TRUE(owning.Remove(id).ok());
    ASSERT_TRUE(brute.Remove(id));
  }
  const Encoded saved = Encode(referencing.ShareStructure(), 500);
  EXPECT_TRUE(SameEncoding(Encode(owning.ShareStructure(), 500), saved));
  PointsById raw_rows{&raw, {}}, image_rows{&images, {}};
  for (std::size_t i = 0; i < raw.size(); ++i) {
    raw_rows.row_of_id.push_back(i);
    image_rows.row_of_id.push_back(i);
  }
  absl::StatusOr<CoverTree> restored = Decode(kDim, saved, raw_rows, map);
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_TRUE(restored->referencing());
  ASSERT_TRUE(restored->CheckInvariants().ok());
  EXPECT_TRUE(SameEncoding(Encode(restored->ShareStructure(), 500), saved));
  for (std::size_t q = 0; q < raw.size(); q += 29) {
    std::vector<Neighbor> knn;
    ASSERT_TRUE(restored->Knn(images.point(q), 5, &knn).ok());
    EXPECT_EQ(knn, brute.Knn(images.point(q), 5)) << "query " << q;
  }
  absl::StatusOr<CoverTree> as_owning = Decode(kDim, saved, image_rows);
  ASSERT_TRUE(as_owning.ok()) << as_owning.status();
  EXPECT_FALSE(as_owning->referencing());
  // Raw rows without the map are not the points the tree was made of.
  EXPECT_FALSE(Decode(kDim, saved, raw_rows).ok());
  EXPECT_FALSE(
      Decode(kDim, saved, raw_rows, DiagonalMap({0, 0, 0}, {1, 1, 1})).ok());
}

TEST(CoverTreeStructure, EmptyAndSingleTrees) {
  const PointSet points = UniformPoints(1, 3, 5);
  PointsById lookup{&points, {0}};
  for (std::size_t n : {0u, 1u}) {
    CoverTree tree(3);
    if (n == 1) {
      ASSERT_TRUE(tree.Insert(0, points.point(0)).ok());
    }
    absl::StatusOr<CoverTree> restored =
        Decode(3, Encode(tree.ShareStructure(), 10), lookup);
    ASSERT_TRUE(restored.ok()) << restored.status();
    EXPECT_EQ(restored->size(), n);
    EXPECT_TRUE(restored->CheckInvariants().ok());
  }
}

}  // namespace
}  // namespace streamreg
