#include "server/cluster/rendezvous.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/sha256.h"

namespace streamreg {

std::uint64_t RendezvousScore(absl::string_view model,
                              absl::string_view server) {
  // The lengths first, so that ("ab", "c") and ("a", "bc") differ.
  const std::string key =
      absl::StrCat(model.size(), ":", model, "|", server.size(), ":", server);
  const Sha256Digest digest = Sha256(key);
  std::uint64_t score = 0;
  for (int i = 0; i < 8; ++i) score = (score << 8) | digest[i];
  return score;
}

std::vector<std::string> RendezvousOwners(
    absl::string_view model, const std::vector<std::string>& servers,
    std::size_t replicas) {
  std::vector<std::pair<std::uint64_t, const std::string*>> scored;
  scored.reserve(servers.size());
  for (const std::string& server : servers) {
    scored.emplace_back(RendezvousScore(model, server), &server);
  }
  const std::size_t kept = std::min(replicas, scored.size());
  std::partial_sort(scored.begin(), scored.begin() + kept, scored.end(),
                    [](const auto& a, const auto& b) {
                      return a.first != b.first ? a.first > b.first
                                                : *a.second < *b.second;
                    });
  std::vector<std::string> owners;
  for (std::size_t i = 0; i < kept; ++i) owners.push_back(*scored[i].second);
  return owners;
}

}  // namespace streamreg
