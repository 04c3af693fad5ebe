#ifndef STREAMREG_SERVER_CLUSTER_ORPHAN_STREAMS_H_
#define STREAMREG_SERVER_CLUSTER_ORPHAN_STREAMS_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "server/cluster/placement_store.h"

namespace streamreg {

// A stream cluster mode makes for a model — its log or its snapshots, of
// one generation (LogStream::StreamName, SnapshotStore::StreamName) — as
// read back from the stream's name.
struct ModelStream {
  enum class Kind { kLog, kSnapshots };
  Kind kind = Kind::kLog;
  std::string model;
  std::uint64_t generation = 0;
};

// The model stream `name` is, or nullopt for any other stream (the
// placements', the live servers' bucket, another application's): only a
// name that LogStream::StreamName or SnapshotStore::StreamName gives back
// exactly.
std::optional<ModelStream> ParseModelStream(absl::string_view name);

// Whether no server will read `stream` again, given every placement as
// read after the stream was listed (PlacementStore::All). A create places
// its model before it makes the log, and generations only grow, so such a
// stream is an orphan if its generation is below its placement's (a log a
// create gave up, an earlier model of the name) or is its placement's for
// a deleted model (no servers). A stream with no placement at all was not
// made by this cluster's creates, and one above its placement's is being
// made by one: both are left alone.
bool IsOrphan(const ModelStream& stream,
              const absl::flat_hash_map<std::string, PlacementStore::Placement>&
                  placements);

}  // namespace streamreg

#endif  // STREAMREG_SERVER_CLUSTER_ORPHAN_STREAMS_H_
