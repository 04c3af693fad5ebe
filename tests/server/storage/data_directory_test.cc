// The server's data directory (server/storage/data_directory.h): made with
// its parents, locked while held so that a second server cannot open it
// (refused naming the path), free again once let go; a path that cannot be
// made refused naming it.
#include "server/storage/data_directory.h"

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/fresh_directory.h"

namespace streamreg {
namespace {

using ::testing::HasSubstr;

TEST(DataDirectoryTest, IsMadeAndLockedWhileHeld) {
  const std::string path = FreshDirectory() + "/a/b/data";
  absl::StatusOr<std::unique_ptr<DataDirectory>> first =
      DataDirectory::Open(path);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ((*first)->path(), path);
  EXPECT_TRUE(std::filesystem::is_regular_file(path + "/LOCK"));

  const absl::StatusOr<std::unique_ptr<DataDirectory>> second =
      DataDirectory::Open(path);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(second.status().message(), HasSubstr(path));
  EXPECT_THAT(second.status().message(), HasSubstr("locked by another"));

  first->reset();
  const absl::StatusOr<std::unique_ptr<DataDirectory>> again =
      DataDirectory::Open(path);
  EXPECT_TRUE(again.ok()) << again.status();
}

TEST(DataDirectoryTest, APathThatCannotBeMadeIsRefusedNamingIt) {
  const std::string file = FreshDirectory() + "/a-file";
  std::ofstream(file) << "not a directory";
  const absl::StatusOr<std::unique_ptr<DataDirectory>> under_a_file =
      DataDirectory::Open(file + "/data");
  EXPECT_EQ(under_a_file.status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(under_a_file.status().message(),
              HasSubstr("--data-dir " + file + "/data: cannot create"));
}

}  // namespace
}  // namespace streamreg
