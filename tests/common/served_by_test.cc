#include "common/served_by.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace streamreg {
namespace {

TEST(ServedByTest, NamesTheServersInAStatusAndReadsThemBack) {
  const std::vector<std::string> servers = {"10.0.0.1:50051", "[::1]:7000"};
  const absl::Status status = ServedByError("arm.left", servers);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(status.message().find("'arm.left'"), std::string::npos);
  EXPECT_EQ(ServedBy(status), servers);
}

TEST(ServedByTest, AServerOfTheModelSendsACallElsewhereWithItsReason) {
  const std::vector<std::string> servers = {"10.0.0.2:50051"};
  const absl::Status status =
      SendElsewhereError("model 'arm' is catching up; write to", servers);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(absl::StartsWith(status.message(),
                               "model 'arm' is catching up; write to"));
  EXPECT_EQ(ServedBy(status), servers);
}

TEST(ServedByTest, OtherStatusesNameNoServer) {
  EXPECT_TRUE(ServedBy(absl::OkStatus()).empty());
  EXPECT_TRUE(ServedBy(absl::UnavailableError("connection refused")).empty());
  // Only an UNAVAILABLE answer sends a client elsewhere.
  EXPECT_TRUE(ServedBy(absl::NotFoundError("model 'x' (servers=a:1)")).empty());
  // A truncated list is not read as one.
  EXPECT_TRUE(ServedBy(absl::UnavailableError("x (servers=a:1,b:")).empty());
  EXPECT_TRUE(ServedBy(ServedByError("x", {})).empty());
}

}  // namespace
}  // namespace streamreg
