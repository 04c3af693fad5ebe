// The bytes an MLKR fit's result travels in between servers (FitExchange):
// read back exactly, and anything else refused (no NATS needed).
#include "server/cluster/fit_exchange.h"

#include <algorithm>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace streamreg {
namespace {

// Two maps over 3 inputs: rank 2 and full rank, with awkward doubles.
std::vector<MlkrMap> TwoMaps() {
  std::vector<MlkrMap> maps(2);
  maps[0].Install(2, {1.0, -2.5, 1e-300, 0.1, 3.0, -0.0}, 0.125);
  maps[1].Install(3, {1.0 / 3, 2, 3, 4, 5, 6, 7, 8, 9.75}, 1e-3);
  return maps;
}

TEST(FitExchangeTest, AResultIsReadBackBitForBit) {
  const std::vector<MlkrMap> maps = TwoMaps();
  const std::string bytes = FitExchange::Encode(77, 1024, maps);
  std::uint64_t sender = 0, fit = 0;
  std::vector<MlkrMap> read;
  ASSERT_TRUE(FitExchange::Decode(bytes, 3, &sender, &fit, &read).ok());
  EXPECT_EQ(sender, 77u);
  EXPECT_EQ(fit, 1024u);
  ASSERT_EQ(read.size(), maps.size());
  for (std::size_t k = 0; k < maps.size(); ++k) {
    EXPECT_EQ(read[k].rank(), maps[k].rank());
    EXPECT_TRUE(std::ranges::equal(read[k].a(), maps[k].a()));
    EXPECT_EQ(read[k].step(), maps[k].step());
  }
}

TEST(FitExchangeTest, AnythingElseIsRefusedAsDataLoss) {
  const std::string bytes = FitExchange::Encode(1, 64, TwoMaps());
  std::uint64_t sender = 0, fit = 0;
  std::vector<MlkrMap> read;
  // Maps over another number of inputs.
  EXPECT_EQ(FitExchange::Decode(bytes, 4, &sender, &fit, &read).code(),
            absl::StatusCode::kDataLoss);
  // Cut short anywhere, or with bytes after it.
  for (std::size_t cut = 0; cut < bytes.size(); cut += 7) {
    EXPECT_EQ(FitExchange::Decode(bytes.substr(0, cut), 3, &sender, &fit, &read)
                  .code(),
              absl::StatusCode::kDataLoss)
        << cut;
  }
  EXPECT_EQ(FitExchange::Decode(bytes + "x", 3, &sender, &fit, &read).code(),
            absl::StatusCode::kDataLoss);
  // Not a result at all.
  EXPECT_EQ(FitExchange::Decode("hello", 3, &sender, &fit, &read).code(),
            absl::StatusCode::kDataLoss);
}

TEST(FitExchangeTest, EachLogStreamHasASubjectOfItsOwn) {
  EXPECT_EQ(FitExchange::Subject("streamreg_arm"),
            "streamreg.fit.streamreg_arm");
  EXPECT_NE(FitExchange::Subject("streamreg_arm"),
            FitExchange::Subject("streamreg-log2_arm"));
}

}  // namespace
}  // namespace streamreg
