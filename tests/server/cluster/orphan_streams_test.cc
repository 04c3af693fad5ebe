// Model streams read back from their names (every name the makers give,
// and nothing else), and which of them no placement reads any more.
#include "server/cluster/orphan_streams.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/cluster/log_stream.h"
#include "server/cluster/snapshot_store.h"

namespace streamreg {
namespace {

using Kind = ModelStream::Kind;

TEST(OrphanStreamsTest, EveryModelStreamNameReadsBackAsItsModelAndGeneration) {
  for (const std::string model : {"arm", "a.b_c-1", "5_x", "x", "arm.v2"}) {
    for (const std::uint64_t generation : {0, 1, 12, 1000000}) {
      SCOPED_TRACE(model + " " + std::to_string(generation));
      const std::optional<ModelStream> log =
          ParseModelStream(LogStream::StreamName(model, generation));
      ASSERT_TRUE(log.has_value());
      EXPECT_EQ(log->kind, Kind::kLog);
      EXPECT_EQ(log->model, model);
      EXPECT_EQ(log->generation, generation);
      const std::optional<ModelStream> snapshots =
          ParseModelStream(SnapshotStore::StreamName(model, generation));
      ASSERT_TRUE(snapshots.has_value());
      EXPECT_EQ(snapshots->kind, Kind::kSnapshots);
      EXPECT_EQ(snapshots->model, model);
      EXPECT_EQ(snapshots->generation, generation);
    }
  }
}

TEST(OrphanStreamsTest, OtherStreamsAreNotModelStreams) {
  for (const char* name :
       {"streamreg-placement", "streamreg-placement-snap",
        "KV_streamreg_servers", "streamreg-log0_m", "streamreg-log01_m",
        "streamreg-log_m", "streamreg-log1_", "streamreg_", "streamreg-snapx_m",
        "streamreg-snap-1_m", "streamreg-log1m", "streamregx_m", "orders_m",
        ""}) {
    EXPECT_FALSE(ParseModelStream(name).has_value()) << name;
  }
  // '~' stands for '.' in a stream name: a model name never holds it.
  const std::optional<ModelStream> dotted =
      ParseModelStream("streamreg-log3_a~b");
  ASSERT_TRUE(dotted.has_value());
  EXPECT_EQ(dotted->model, "a.b");
}

TEST(OrphanStreamsTest, OnlyGenerationsNoPlacementReadsAgainAreOrphans) {
  const absl::flat_hash_map<std::string, PlacementStore::Placement> placements =
      {{"live", {.servers = {"s1", "s2"}, .revision = 7, .log = 3}},
       {"deleted", {.servers = {}, .revision = 9, .log = 2}},
       {"creating",
        {.servers = {"s1"}, .revision = 11, .log = 1, .created = false}}};
  const auto orphan = [&](const std::string& model, std::uint64_t generation) {
    return IsOrphan(
        {.kind = Kind::kLog, .model = model, .generation = generation},
        placements);
  };
  // Below the placement's generation: given up, or an earlier model's.
  EXPECT_TRUE(orphan("live", 0));
  EXPECT_TRUE(orphan("live", 2));
  // The placement's own: read by its servers.
  EXPECT_FALSE(orphan("live", 3));
  // Above it: a create is making it (placed after the listing).
  EXPECT_FALSE(orphan("live", 4));
  // A deleted model's, its own generation included.
  EXPECT_TRUE(orphan("deleted", 1));
  EXPECT_TRUE(orphan("deleted", 2));
  EXPECT_FALSE(orphan("deleted", 3));
  // A create under way reads its placement's generation.
  EXPECT_FALSE(orphan("creating", 1));
  EXPECT_TRUE(orphan("creating", 0));
  // No placement: not this cluster's creates', left alone.
  EXPECT_FALSE(orphan("stranger", 0));
  EXPECT_FALSE(orphan("stranger", 5));
  // Snapshots go by the same rule.
  EXPECT_TRUE(
      IsOrphan({.kind = Kind::kSnapshots, .model = "live", .generation = 1},
               placements));
}

}  // namespace
}  // namespace streamreg
