#include "server/cluster/orphan_streams.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"
#include "server/cluster/log_stream.h"
#include "server/cluster/snapshot_store.h"

namespace streamreg {
namespace {

// "<generation>_<escaped model>", what follows a stream name's prefix: no
// digits is generation 0.
std::optional<ModelStream> ParseTail(absl::string_view tail,
                                     ModelStream::Kind kind) {
  const std::size_t underscore = tail.find('_');
  if (underscore == absl::string_view::npos) return std::nullopt;
  const absl::string_view digits = tail.substr(0, underscore);
  ModelStream stream;
  stream.kind = kind;
  if (!digits.empty() && !absl::SimpleAtoi(digits, &stream.generation)) {
    return std::nullopt;
  }
  stream.model = LogStream::UnescapedName(tail.substr(underscore + 1));
  if (stream.model.empty()) return std::nullopt;
  return stream;
}

std::string MadeName(const ModelStream& stream) {
  return stream.kind == ModelStream::Kind::kLog
             ? LogStream::StreamName(stream.model, stream.generation)
             : SnapshotStore::StreamName(stream.model, stream.generation);
}

}  // namespace

std::optional<ModelStream> ParseModelStream(absl::string_view name) {
  std::optional<ModelStream> stream;
  absl::string_view tail = name;
  if (absl::ConsumePrefix(&tail, "streamreg-snap")) {
    stream = ParseTail(tail, ModelStream::Kind::kSnapshots);
  } else if (absl::ConsumePrefix(&tail, "streamreg-log")) {
    stream = ParseTail(tail, ModelStream::Kind::kLog);
  } else if (absl::ConsumePrefix(&tail, "streamreg") &&
             absl::StartsWith(tail, "_")) {
    stream = ParseTail(tail, ModelStream::Kind::kLog);
  }
  // Only a name the makers give back exactly: not "streamreg-log_m" (a
  // log of generation 0 is "streamreg_m"), "streamreg-log01_m", or a model
  // that held '~'.
  if (!stream.has_value() || MadeName(*stream) != name) return std::nullopt;
  return stream;
}

bool IsOrphan(const ModelStream& stream,
              const absl::flat_hash_map<std::string, PlacementStore::Placement>&
                  placements) {
  const auto placed = placements.find(stream.model);
  if (placed == placements.end()) return false;
  const PlacementStore::Placement& placement = placed->second;
  if (stream.generation < placement.log) return true;
  return stream.generation == placement.log && placement.servers.empty();
}

}  // namespace streamreg
