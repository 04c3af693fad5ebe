// SyncPolicy (server/storage/sync_policy.h): --sync's two forms parse and
// print back as given, and anything else is refused quoting the flag.
#include "server/storage/sync_policy.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace streamreg {
namespace {

TEST(SyncPolicyTest, AlwaysAndIntervalsParseAndPrintAsGiven) {
  const absl::StatusOr<SyncPolicy> always = SyncPolicy::Parse("always");
  ASSERT_TRUE(always.ok());
  EXPECT_EQ(always->mode, SyncPolicy::Mode::kAlways);
  EXPECT_EQ(always->ToString(), "always");
  for (const char* text : {"interval:1", "interval:250", "interval:60000"}) {
    const absl::StatusOr<SyncPolicy> policy = SyncPolicy::Parse(text);
    ASSERT_TRUE(policy.ok()) << text;
    EXPECT_EQ(policy->mode, SyncPolicy::Mode::kInterval);
    EXPECT_EQ(policy->ToString(), text);
  }
  EXPECT_EQ(SyncPolicy::Parse("interval:250")->interval,
            absl::Milliseconds(250));
}

TEST(SyncPolicyTest, AnythingElseIsRefusedQuotingTheFlag) {
  for (const char* text :
       {"", "Always", "never", "interval:", "interval:0", "interval:60001",
        "interval:-5", "interval:1.5", "interval:10ms", "interval10"}) {
    const absl::StatusOr<SyncPolicy> policy = SyncPolicy::Parse(text);
    ASSERT_FALSE(policy.ok()) << text;
    EXPECT_EQ(policy.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(policy.status().message(),
              absl::StrCat("--sync: '", text,
                           "' is neither 'always' nor 'interval:MS' with MS "
                           "from 1 to 60000"));
  }
}

}  // namespace
}  // namespace streamreg
