// SHA-256 against the published test vectors (FIPS 180-2, appendix B),
// and the hasher fed in parts against the digest of the parts joined.
#include "common/sha256.h"

#include <cstddef>
#include <string>
#include <utility>

#include "gtest/gtest.h"

namespace streamreg {
namespace {

constexpr char kAbc[] =
    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
constexpr char kEmpty[] =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
constexpr char kTwoBlocks[] =
    "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1";
constexpr char kTwoBlocksText[] =
    "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";

TEST(Sha256Test, MatchesThePublishedVectors) {
  EXPECT_EQ(Sha256Hex("abc"), kAbc);
  EXPECT_EQ(Sha256Hex(""), kEmpty);
  EXPECT_EQ(Sha256Hex(kTwoBlocksText), kTwoBlocks);
}

TEST(Sha256Test, AHasherFedInPartsDigestsThePartsJoined) {
  std::string bytes(100'003, '\0');
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    bytes[i] = static_cast<char>(i * 31 + i / 257);
  }
  for (std::size_t part : {1u, 63u, 64u, 65u, 4096u, 100'003u}) {
    Sha256Hasher hasher;
    for (std::size_t offset = 0; offset < bytes.size(); offset += part) {
      hasher.Update(absl::string_view(bytes).substr(offset, part));
    }
    EXPECT_EQ(hasher.FinishHex(), Sha256Hex(bytes)) << "parts of " << part;
  }
  // Finished, it starts again empty; moved, it goes on where it was.
  Sha256Hasher hasher;
  hasher.Update("ab");
  Sha256Hasher moved = std::move(hasher);
  moved.Update("c");
  EXPECT_EQ(moved.FinishHex(), kAbc);
  EXPECT_EQ(moved.FinishHex(), kEmpty);
  hasher.Update(kTwoBlocksText);  // a moved-from hasher is empty and usable
  EXPECT_EQ(hasher.FinishHex(), kTwoBlocks);
}

}  // namespace
}  // namespace streamreg
