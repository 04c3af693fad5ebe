// Rendezvous hashing: the owners are the top scores, the same whatever the
// servers' order; the load is even; a server joining or leaving moves only
// its share, one replica per model moved.
#include "server/cluster/rendezvous.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace streamreg {
namespace {

constexpr int kModels = 10000;

std::string ModelName(int i) { return absl::StrCat("arm-", i); }

std::vector<std::string> Servers(int n) {
  std::vector<std::string> servers;
  for (int i = 0; i < n; ++i) servers.push_back(absl::StrCat("10.0.0.", i));
  return servers;
}

TEST(RendezvousTest, OwnersAreTheHighestScoresWhateverTheServersOrder) {
  std::vector<std::string> servers = Servers(7);
  for (int m = 0; m < 200; ++m) {
    const std::string model = ModelName(m);
    std::vector<std::pair<std::uint64_t, std::string>> all;
    for (const std::string& server : servers) {
      all.emplace_back(RendezvousScore(model, server), server);
    }
    std::sort(all.rbegin(), all.rend());
    const std::vector<std::string> owners = RendezvousOwners(model, servers, 3);
    ASSERT_EQ(owners.size(), 3u);
    for (int r = 0; r < 3; ++r) EXPECT_EQ(owners[r], all[r].second);
    std::vector<std::string> reversed(servers.rbegin(), servers.rend());
    EXPECT_EQ(RendezvousOwners(model, reversed, 3), owners);
  }
  // Fewer servers than replicas: all of them.
  EXPECT_EQ(RendezvousOwners("m", Servers(2), 3).size(), 2u);
  EXPECT_TRUE(RendezvousOwners("m", {}, 3).empty());
  // The score is a function of both names, lengths included.
  EXPECT_NE(RendezvousScore("ab", "c"), RendezvousScore("a", "bc"));
  EXPECT_EQ(RendezvousScore("a", "b"), RendezvousScore("a", "b"));
}

TEST(RendezvousTest, EachServerCarriesItsShare) {
  const std::vector<std::string> servers = Servers(5);
  std::map<std::string, int> load;
  for (int m = 0; m < kModels; ++m) {
    for (const std::string& owner :
         RendezvousOwners(ModelName(m), servers, 3)) {
      ++load[owner];
    }
  }
  // 3 replicas of 10,000 models over 5 servers: 6,000 each (binomial sd
  // 49; the bound is 4 sd).
  for (const std::string& server : servers) {
    EXPECT_NEAR(load[server], 6000, 200) << server;
  }
}

// 3 -> 4 servers with 3 replicas: the joiner is among a model's top 3 of 4
// for 3/4 of the models, and each of those moves exactly one replica to it;
// with 1 replica, 4 -> 5 servers moves 1/5 of the models.
TEST(RendezvousTest, AServerJoiningMovesOnlyItsShareOneReplicaEach) {
  for (auto [before, replicas, share] :
       {std::tuple{3, 3, 0.75}, std::tuple{4, 1, 0.2}, std::tuple{9, 3, 0.3}}) {
    SCOPED_TRACE(absl::StrCat(before, " servers, ", replicas, " replicas"));
    const std::vector<std::string> old_servers = Servers(before);
    const std::vector<std::string> new_servers = Servers(before + 1);
    const std::string& joiner = new_servers.back();
    int moved = 0;
    for (int m = 0; m < kModels; ++m) {
      const std::vector<std::string> was =
          RendezvousOwners(ModelName(m), old_servers, replicas);
      const std::vector<std::string> is =
          RendezvousOwners(ModelName(m), new_servers, replicas);
      const std::set<std::string> was_set(was.begin(), was.end());
      const std::set<std::string> is_set(is.begin(), is.end());
      if (was_set == is_set) continue;
      ++moved;
      // The joiner came in; exactly one old owner went.
      ASSERT_TRUE(is_set.count(joiner));
      int kept = 0;
      for (const std::string& owner : was) kept += is_set.count(owner);
      ASSERT_EQ(kept, replicas - 1);
    }
    EXPECT_NEAR(static_cast<double>(moved) / kModels, share, 0.02);
  }
}

TEST(RendezvousTest, AServerLeavingHandsOnlyItsOwnModelsOn) {
  const std::vector<std::string> servers = Servers(6);
  std::vector<std::string> remaining = servers;
  const std::string leaver = remaining[2];
  remaining.erase(remaining.begin() + 2);
  for (int m = 0; m < kModels; ++m) {
    const std::vector<std::string> was =
        RendezvousOwners(ModelName(m), servers, 3);
    const std::vector<std::string> is =
        RendezvousOwners(ModelName(m), remaining, 3);
    if (std::find(was.begin(), was.end(), leaver) == was.end()) {
      ASSERT_EQ(is, was) << ModelName(m);
      continue;
    }
    // The others stay; one newcomer replaces the leaver.
    for (const std::string& owner : was) {
      if (owner != leaver) {
        ASSERT_NE(std::find(is.begin(), is.end(), owner), is.end());
      }
    }
  }
}

}  // namespace
}  // namespace streamreg
