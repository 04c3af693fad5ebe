// RecordParts (core/base/record_parts.h): the first part of a record that
// does not decode is named, with the byte it began at, and nothing after
// it is read as if it had.
#include "core/base/record_parts.h"

#include <string>

#include "gtest/gtest.h"

namespace streamreg {
namespace {

std::string ThreeParts() {
  std::string bytes;
  ByteWriter out(&bytes);
  out.U32(7);        // a version, bytes 0-3
  out.U64(2);        // a count, bytes 4-11
  out.String("ab");  // a name, bytes 12-21
  return bytes;
}

TEST(RecordPartsTest, PartsReadInOrderAreWhole) {
  const std::string bytes = ThreeParts();
  ByteReader in(bytes);
  RecordParts parts(in, "record");
  EXPECT_TRUE(parts.Read("version", in.U32() == 7));
  EXPECT_TRUE(parts.Read("count", in.U64() == 2));
  EXPECT_TRUE(parts.Read("name", in.String() == "ab"));
  EXPECT_TRUE(parts.End());
  EXPECT_TRUE(parts.status().ok());
}

TEST(RecordPartsTest, AMalformedPartIsNamedWithTheByteItBeganAt) {
  const std::string bytes = ThreeParts();
  ByteReader in(bytes);
  RecordParts parts(in, "record");
  EXPECT_TRUE(parts.Read("version", in.U32() == 7));
  EXPECT_FALSE(parts.Read("count", in.U64() == 3));
  EXPECT_EQ(parts.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(parts.status().message(),
            "record: count at byte 4: malformed, or not of this model");
  // Later parts are not read as whole, and the first fault stays named.
  EXPECT_FALSE(parts.Read("name", in.String() == "ab"));
  EXPECT_FALSE(parts.End());
  EXPECT_EQ(parts.status().message(),
            "record: count at byte 4: malformed, or not of this model");
}

TEST(RecordPartsTest, ACutRecordNamesThePartItCutAndSaysTruncated) {
  const std::string bytes = ThreeParts();
  ByteReader in(absl::string_view(bytes).substr(0, 15));
  RecordParts parts(in, "record");
  EXPECT_TRUE(parts.Read("version", in.U32() == 7));
  EXPECT_TRUE(parts.Read("count", in.U64() == 2));
  in.String();  // its 2 bytes end past the cut
  EXPECT_FALSE(parts.Read("name", true));
  EXPECT_EQ(parts.status().message(), "record: name at byte 12: truncated");
}

TEST(RecordPartsTest, BytesAfterTheLastPartAreAFault) {
  const std::string bytes = ThreeParts() + "zz";
  ByteReader in(bytes);
  RecordParts parts(in, "record");
  EXPECT_TRUE(parts.Read("version", in.U32() == 7));
  EXPECT_TRUE(parts.Read("count", in.U64() == 2));
  EXPECT_TRUE(parts.Read("name", in.String() == "ab"));
  EXPECT_FALSE(parts.End());
  EXPECT_EQ(parts.status().message(),
            "record: 2 bytes after its end at byte 22");
}

}  // namespace
}  // namespace streamreg
