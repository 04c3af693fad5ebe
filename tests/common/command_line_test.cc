#include "common/command_line.h"

#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "common/nearest_name.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

ABSL_FLAG(std::string, test_data_dir, "data", "where data goes");
ABSL_FLAG(int, test_count, 3, "how many");
ABSL_FLAG(bool, test_verbose, false, "say more");
ABSL_FLAG(absl::Duration, test_delay, absl::Seconds(1), "how long");
ABSL_FLAG(int, test_not_taken, 0, "a flag the usage does not take");

namespace streamreg {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// Every test starts from the flags' defaults.
class CommandLineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::SetFlag(&FLAGS_test_data_dir, "data");
    absl::SetFlag(&FLAGS_test_count, 3);
    absl::SetFlag(&FLAGS_test_verbose, false);
    absl::SetFlag(&FLAGS_test_delay, absl::Seconds(1));
  }

  CommandUsage usage_ = {
      .name = "tool",
      .synopsis = "[flags] FILE",
      .summary = "Does a thing.",
      .flags = {"test_data_dir", "test_count", "test_verbose"},
      .shared_flags_heading = "Shared flags",
      .shared_flags = {"test_delay"},
      .examples = {"tool --test-count 4 file"},
  };
};

TEST_F(CommandLineTest, ReadsEverySpellingOfAFlag) {
  absl::StatusOr<ParsedArguments> parsed =
      ParseArguments({"--test-data-dir=/tmp/x", "--test_count", "7",
                      "-test_verbose", "--test-delay=250ms", "file"},
                     usage_);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_FALSE(parsed->help);
  EXPECT_THAT(parsed->positional, ElementsAre("file"));
  EXPECT_EQ(absl::GetFlag(FLAGS_test_data_dir), "/tmp/x");
  EXPECT_EQ(absl::GetFlag(FLAGS_test_count), 7);
  EXPECT_TRUE(absl::GetFlag(FLAGS_test_verbose));
  EXPECT_EQ(absl::GetFlag(FLAGS_test_delay), absl::Milliseconds(250));
}

TEST_F(CommandLineTest, BooleansTakeNoValueUnlessWrittenWithEquals) {
  ASSERT_TRUE(ParseArguments({"--test_verbose", "file"}, usage_).ok());
  EXPECT_TRUE(absl::GetFlag(FLAGS_test_verbose));
  ASSERT_TRUE(ParseArguments({"--notest_verbose"}, usage_).ok());
  EXPECT_FALSE(absl::GetFlag(FLAGS_test_verbose));
  ASSERT_TRUE(ParseArguments({"--test_verbose=true"}, usage_).ok());
  EXPECT_TRUE(absl::GetFlag(FLAGS_test_verbose));
}

TEST_F(CommandLineTest, ValuesMayStartWithADash) {
  ASSERT_TRUE(ParseArguments({"--test_count", "-5"}, usage_).ok());
  EXPECT_EQ(absl::GetFlag(FLAGS_test_count), -5);
}

TEST_F(CommandLineTest, EverythingAfterTwoDashesIsPositional) {
  absl::StatusOr<ParsedArguments> parsed =
      ParseArguments({"a", "--", "--test_count", "-x"}, usage_);
  ASSERT_TRUE(parsed.ok());
  EXPECT_THAT(parsed->positional, ElementsAre("a", "--test_count", "-x"));
  EXPECT_EQ(absl::GetFlag(FLAGS_test_count), 3);
}

TEST_F(CommandLineTest, HelpIsAskedForInThreeWays) {
  for (const char* help : {"--help", "-h", "--helpfull"}) {
    absl::StatusOr<ParsedArguments> parsed = ParseArguments({help}, usage_);
    ASSERT_TRUE(parsed.ok());
    EXPECT_TRUE(parsed->help) << help;
  }
}

TEST_F(CommandLineTest, ErrorsAreOneLineNamingTheFlag) {
  struct Case {
    std::vector<std::string> arguments;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {{"--nope"}, "unknown flag --nope"},
           // Defined in the program, but not a flag of this command.
           {{"--test_not_taken=1"}, "unknown flag --test_not_taken"},
           {{"--test_count"}, "--test_count needs a value"},
           {{"--test_count=many"},
            "--test_count=many: expected a whole number (its default is 3)"},
           {{"--test_delay", "soon"},
            "--test_delay=soon: expected a duration such as 500ms, 2s or 1m "
            "(its default is 1s)"},
           {{"--test_verbose=maybe"},
            "--test_verbose=maybe: expected true or false (its default is "
            "false)"},
           {{"--notest_count"}, "unknown flag --notest_count"},
           // A typo of a flag the command takes is named.
           {{"--test_cuont=1"},
            "unknown flag --test_cuont (did you mean --test_count?)"},
           {{"--test_dela=1s"},
            "unknown flag --test_dela (did you mean --test_delay?)"},
       }) {
    absl::StatusOr<ParsedArguments> parsed =
        ParseArguments(c.arguments, usage_);
    ASSERT_FALSE(parsed.ok()) << c.arguments[0];
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(parsed.status().message()), HasSubstr(c.message));
    EXPECT_EQ(std::string(parsed.status().message()).find('\n'),
              std::string::npos);
  }
}

TEST_F(CommandLineTest, AConfigFileIsOverriddenByTheCommandLine) {
  const std::string path = ::testing::TempDir() + "/command_line_test.conf";
  {
    std::ofstream config(path);
    config << "# a comment\n"
              "test-data-dir = /srv/data   # trailing comment\n"
              "test_count 9\n"
              "--test_verbose\n"
              "\n";
  }
  CommandUsage usage = usage_;
  usage.config_file = true;
  ASSERT_TRUE(
      ParseArguments({"--config", path, "--test_count=11"}, usage).ok());
  EXPECT_EQ(absl::GetFlag(FLAGS_test_data_dir), "/srv/data");
  EXPECT_EQ(absl::GetFlag(FLAGS_test_count), 11);
  EXPECT_TRUE(absl::GetFlag(FLAGS_test_verbose));
  std::remove(path.c_str());

  absl::StatusOr<ParsedArguments> missing =
      ParseArguments({"--config=/nonexistent/x.conf"}, usage);
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(std::string(missing.status().message()),
              HasSubstr("--config /nonexistent/x.conf: cannot open"));
  // Without config_file, --config is an unknown flag.
  EXPECT_FALSE(ParseArguments({"--config", path}, usage_).ok());
}

TEST_F(CommandLineTest, PositionalWordsSkipFlagValues) {
  EXPECT_THAT(
      PositionalWords({"--test_data_dir", "d", "bench", "--test_verbose",
                       "learn", "--test_count=2", "--test-delay", "1s"}),
      ElementsAre("bench", "learn"));
  // A flag it does not know is taken to have no value (parsing rejects it).
  EXPECT_THAT(PositionalWords({"--unknown", "list"}), ElementsAre("list"));
  EXPECT_THAT(PositionalWords({"--help"}), IsEmpty());
  EXPECT_THAT(PositionalWords({"--notest_verbose", "list"}),
              ElementsAre("list"));
}

TEST_F(CommandLineTest, HelpListsTheFlagsWithDefaultsAndTheExample) {
  const std::string help = HelpText(usage_);
  EXPECT_THAT(help, HasSubstr("usage: tool [flags] FILE\n"));
  EXPECT_THAT(help, HasSubstr("Does a thing."));
  EXPECT_THAT(help, HasSubstr("  --test_data_dir  (default \"data\")\n"
                              "      where data goes\n"));
  EXPECT_THAT(help, HasSubstr("  --test_count  (default 3)\n"));
  EXPECT_THAT(help, HasSubstr("Shared flags:\n  --test_delay  (default 1s)"));
  EXPECT_THAT(help, HasSubstr("Example:\n  tool --test-count 4 file\n"));
  EXPECT_THAT(help, ::testing::Not(HasSubstr("test_not_taken")));
}

TEST_F(CommandLineTest, HelpWrapsLongTextAt79Columns) {
  CommandUsage usage = usage_;
  usage.summary = std::string(30, 'a');
  for (int i = 0; i < 20; ++i) usage.summary += " word" + std::to_string(i);
  for (absl::string_view line : absl::StrSplit(HelpText(usage), '\n')) {
    EXPECT_LE(line.size(), 79u) << line;
  }
}

TEST_F(CommandLineTest, FlagsDefinedInAFileAreFoundByItsPath) {
  const std::vector<std::string> flags =
      FlagsDefinedIn({"tests/common/command_line_test.cc"});
  EXPECT_THAT(flags, ElementsAre("test_count", "test_data_dir", "test_delay",
                                 "test_not_taken", "test_verbose"));
  EXPECT_THAT(FlagsDefinedIn({"no/such_file.cc"}), IsEmpty());
}

TEST_F(CommandLineTest, AUsageErrorExitsTwoAndOtherFailuresOne) {
  const absl::Status usage = UsageError("--metric: unknown value 'foo'");
  EXPECT_EQ(usage.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(usage.message(), "--metric: unknown value 'foo'");
  EXPECT_EQ(ReportFailure("streamreg create", usage), 2);
  // The same code and message from elsewhere (the server's verdict on a
  // sample) is a failure, not a usage error.
  EXPECT_EQ(ReportFailure("streamreg create",
                          absl::InvalidArgumentError(usage.message())),
            1);
  EXPECT_EQ(ReportFailure("streamreg list", absl::UnavailableError("down")), 1);
}

// The "did you mean" the command lines' errors use (common/nearest_name.h),
// against distances counted by hand.
TEST(NearestNameTest, EditDistanceCountsEachEditOnceAndASwapOnce) {
  EXPECT_EQ(EditDistance("", ""), 0u);
  EXPECT_EQ(EditDistance("", "arm"), 3u);
  EXPECT_EQ(EditDistance("arm", ""), 3u);
  EXPECT_EQ(EditDistance("arm", "arm"), 0u);
  EXPECT_EQ(EditDistance("arn", "arm"), 1u);         // a substitution
  EXPECT_EQ(EditDistance("arms", "arm"), 1u);        // a deletion
  EXPECT_EQ(EditDistance("lsit", "list"), 1u);       // a swap
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);  // the textbook pair
  EXPECT_EQ(EditDistance("ca", "abc"), 3u);  // no edit of a swapped pair
  EXPECT_EQ(EditDistance("egopp", "egop"), 1u);
}

TEST(NearestNameTest, OnlyANearEnoughNameIsSuggested) {
  const std::vector<std::string> models = {"arm", "panda", "pendulum"};
  EXPECT_EQ(NearestName("arn", models), "arm");
  EXPECT_EQ(NearestName("pamda", models), "panda");
  EXPECT_EQ(NearestName("pendlum", models), "pendulum");
  EXPECT_EQ(NearestName("arm", models), std::nullopt);  // it exists
  EXPECT_EQ(NearestName("robot", models), std::nullopt);
  EXPECT_EQ(NearestName("x", models), std::nullopt);
  EXPECT_EQ(NearestName("x", std::vector<std::string>{}), std::nullopt);
  // Nearer wins over first; the first of equals.
  EXPECT_EQ(NearestName("pand", std::vector<std::string>{"pendu", "panda"}),
            "panda");
  EXPECT_EQ(NearestName("ab", std::vector<std::string>{"ax", "xb"}), "ax");
  EXPECT_EQ(DidYouMean("arn", models), " (did you mean 'arm'?)");
  EXPECT_EQ(DidYouMean("modle", std::vector<std::string>{"model"}, "--", ""),
            " (did you mean --model?)");
  EXPECT_EQ(DidYouMean("robot", models), "");
}

}  // namespace
}  // namespace streamreg
