// TakeOverKey (core/model/take_over_key.h): the name each key is logged
// under, and its 13-byte encoding, with a damaged one named.
#include "core/model/take_over_key.h"

#include <string>

#include "gtest/gtest.h"

namespace streamreg {
namespace {

using Work = TakeOverKey::Work;

TEST(TakeOverKeyTest, EachKeyHasItsNameAndRoundTripsIn13Bytes) {
  const struct {
    TakeOverKey key;
    const char* name;
  } cases[] = {
      {{Work::kMetricRefresh, 0, 10}, "metric_refresh"},
      {{Work::kMlkrFit, 0, 20}, "mlkr_fit"},
      {{Work::kRandomFeatureRebuild, 0, 30}, "random_feature_rebuild"},
      {{Work::kGradientIndexRebuild, 0, 40}, "gradient_index_rebuild"},
      {{Work::kPredictionIndexRebuild, 3, 50}, "prediction_index_rebuild[3]"},
  };
  for (const auto& [key, name] : cases) {
    EXPECT_EQ(TakeOverKeyName(key), name);
    std::string bytes;
    ByteWriter writer(&bytes);
    SaveTakeOverKey(key, writer);
    EXPECT_EQ(bytes.size(), 13u);
    ByteReader reader(bytes);
    TakeOverKey read;
    ASSERT_TRUE(LoadTakeOverKey(reader, &read).ok()) << name;
    EXPECT_EQ(read, key);
    EXPECT_TRUE(reader.done());
  }
}

TEST(TakeOverKeyTest, AnUnknownWorkOrACutKeyIsNamed) {
  std::string bytes;
  ByteWriter writer(&bytes);
  writer.U8(0);  // something before the key: offsets count from the start
  SaveTakeOverKey({Work::kMlkrFit, 0, 7}, writer);
  bytes[1] = 5;
  ByteReader reader(bytes);
  reader.U8();
  TakeOverKey key;
  EXPECT_EQ(LoadTakeOverKey(reader, &key).message(),
            "take-over key: work at byte 1: unknown kind 5");
  bytes[1] = 1;
  ByteReader cut(absl::string_view(bytes).substr(0, 10));
  cut.U8();
  EXPECT_EQ(LoadTakeOverKey(cut, &key).message(),
            "take-over key: truncated at byte 6");
}

}  // namespace
}  // namespace streamreg
