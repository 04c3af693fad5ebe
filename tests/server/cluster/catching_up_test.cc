// Where a call goes while a replica replays its log's tail: to the
// model's other servers; alone, a write is taken and a read retried, never
// answered "no samples" (final for a client) while the log holds some.
#include "server/cluster/catching_up.h"

#include <string>
#include <vector>

#include "common/served_by.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace streamreg {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(WhileCatchingUpTest, ACaughtUpReplicaTakesEveryCall) {
  for (CallKind kind : {CallKind::kRead, CallKind::kWrite}) {
    EXPECT_TRUE(WhileCatchingUp("m", false, 7, {"b:1"}, kind).ok());
    EXPECT_TRUE(WhileCatchingUp("m", false, 7, {}, kind).ok());
  }
}

TEST(WhileCatchingUpTest, CallsGoToTheModelsOtherServers) {
  const std::vector<std::string> others = {"b:1", "c:2"};
  const absl::Status read =
      WhileCatchingUp("m", true, 3, others, CallKind::kRead);
  EXPECT_EQ(read.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(read.message(), HasSubstr("applied 3 entries); read from"));
  EXPECT_THAT(ServedBy(read), ElementsAre("b:1", "c:2"));
  const absl::Status write =
      WhileCatchingUp("m", true, 3, others, CallKind::kWrite);
  EXPECT_THAT(write.message(), HasSubstr("write to"));
  EXPECT_THAT(ServedBy(write), ElementsAre("b:1", "c:2"));
}

// The soak test's NATS pause met it: a replica alone on its placement,
// replaying its log, answered thousands of reads FAILED_PRECONDITION ("no
// samples to predict from"), which no client retries.
TEST(WhileCatchingUpTest, AloneAWriteIsTakenAndAReadRetried) {
  EXPECT_TRUE(WhileCatchingUp("m", true, 1, {}, CallKind::kWrite).ok());
  const absl::Status read = WhileCatchingUp("m", true, 1, {}, CallKind::kRead);
  EXPECT_EQ(read.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(read.message(), HasSubstr("model 'm' is catching up"));
  EXPECT_THAT(read.message(), HasSubstr("retry"));
  EXPECT_TRUE(ServedBy(read).empty());
}

}  // namespace
}  // namespace streamreg
