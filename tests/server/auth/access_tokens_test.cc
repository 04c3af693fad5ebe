// The bearer-token table of --auth_tokens: parsing (and the errors naming
// the line, never the token), lookups, and permissions by model prefix.
#include "server/auth/access_tokens.h"

#include <sys/stat.h>

#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "tests/support/fresh_directory.h"

namespace streamreg {
namespace {

constexpr char kOpsToken[] = "ops-0123456789abcdef";
constexpr char kRobotToken[] = "robot-0123456789abcdef";

constexpr char kTable[] =
    "# name  token  permissions  prefixes\n"
    "ops    ops-0123456789abcdef    read,write,admin  *\n"
    "\n"
    "robot  robot-0123456789abcdef  read,write  arm1. arm2.   # two arms\n"
    "robot\trobot-0123456789abcdef\tread\tshared.\r\n";

TEST(AccessTokensTest, FindsEachHolderByItsTokenOnly) {
  absl::StatusOr<AccessTokens> tokens = AccessTokens::Parse(kTable, "table");
  ASSERT_TRUE(tokens.ok()) << tokens.status();
  EXPECT_EQ(tokens->size(), 2u);
  ASSERT_NE(tokens->Find(kOpsToken), nullptr);
  EXPECT_EQ(tokens->Find(kOpsToken)->name, "ops");
  ASSERT_NE(tokens->Find(kRobotToken), nullptr);
  EXPECT_EQ(tokens->Find(kRobotToken)->name, "robot");
  EXPECT_EQ(tokens->Find("robot-0123456789abcdeF"), nullptr);
  EXPECT_EQ(tokens->Find("robot-0123456789abcde"), nullptr);
  EXPECT_EQ(tokens->Find(""), nullptr);
  EXPECT_EQ(tokens->FindDigest(DigestOfToken(kOpsToken)),
            tokens->Find(kOpsToken));
}

TEST(AccessTokensTest, PermissionsHoldOnTheirPrefixesOnly) {
  absl::StatusOr<AccessTokens> tokens = AccessTokens::Parse(kTable, "table");
  ASSERT_TRUE(tokens.ok()) << tokens.status();
  const TokenHolder& ops = *tokens->Find(kOpsToken);
  const TokenHolder& robot = *tokens->Find(kRobotToken);
  for (const char* model : {"arm1.torque", "anything", "x"}) {
    EXPECT_TRUE(ops.Allows(model, Permission::kRead)) << model;
    EXPECT_TRUE(ops.Allows(model, Permission::kWrite)) << model;
    EXPECT_TRUE(ops.Allows(model, Permission::kAdmin)) << model;
  }
  EXPECT_TRUE(robot.Allows("arm1.torque", Permission::kRead));
  EXPECT_TRUE(robot.Allows("arm2.torque", Permission::kWrite));
  EXPECT_FALSE(robot.Allows("arm1.torque", Permission::kAdmin));
  EXPECT_FALSE(robot.Allows("arm3.torque", Permission::kRead));
  // A prefix is a prefix of the name, not a substring of it.
  EXPECT_FALSE(robot.Allows("old.arm1.torque", Permission::kRead));
  EXPECT_FALSE(robot.Allows("arm1", Permission::kRead));
  // The second line adds read-only access to other models.
  EXPECT_TRUE(robot.Allows("shared.map", Permission::kRead));
  EXPECT_FALSE(robot.Allows("shared.map", Permission::kWrite));
  EXPECT_EQ(robot.PermissionsOn("arm1.x"), "read,write");
  EXPECT_EQ(robot.PermissionsOn("shared.x"), "read");
  EXPECT_EQ(robot.PermissionsOn("arm3.x"), "none");
  EXPECT_EQ(ops.PermissionsOn("arm3.x"), "read,write,admin");
}

TEST(AccessTokensTest, PermissionsDoNotImplyOneAnother) {
  absl::StatusOr<AccessTokens> tokens = AccessTokens::Parse(
      "creator  creator-0123456789abcdef  admin  *\n", "table");
  ASSERT_TRUE(tokens.ok()) << tokens.status();
  const TokenHolder& creator = *tokens->Find("creator-0123456789abcdef");
  EXPECT_TRUE(creator.Allows("m", Permission::kAdmin));
  EXPECT_FALSE(creator.Allows("m", Permission::kRead));
  EXPECT_FALSE(creator.Allows("m", Permission::kWrite));
}

// The error for a one-line file (after two lines of comments).
std::string ErrorOf(const std::string& line) {
  absl::StatusOr<AccessTokens> tokens =
      AccessTokens::Parse("# comment\n\n" + line, "tokens.txt");
  EXPECT_FALSE(tokens.ok()) << line;
  if (tokens.ok()) return "";
  EXPECT_EQ(tokens.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(tokens.status().message());
}

TEST(AccessTokensTest, MistakesAreRefusedNamingTheLineAndNeverTheToken) {
  const std::string token = "secret-0123456789abcdef";
  struct Case {
    std::string line;
    std::string expected;
  };
  const Case cases[] = {
      {"robot " + token + " read", "tokens.txt line 3: expected NAME TOKEN"},
      {"robot short read *", "line 3: the token has 5 characters"},
      {"robot " + std::string(513, 'x') + " read *", "513 characters"},
      {"robot " + token + " read,delete *", "permission 'delete' is not one"},
      {"robot " + token + " read, *", "permission '' is not one"},
      {"robot " + token + " read arm1/", "prefix: 'arm1/' may contain only"},
      {"a " + token + " read *\nb " + token + " read *",
       "line 4: the token of 'b' is also the token of 'a'"},
      {"a " + token + " read *\na other-0123456789abcdef read *",
       "line 4: 'a' has a different token on an earlier line"},
      {"# only comments", "tokens.txt: no tokens"},
      // A token in the permissions' or a prefix's column is not shown
      // either (found by access_tokens_fuzzer).
      {"robot " + token + " " + token + " *",
       "permission of 23 characters (not shown: it could be a token)"},
      {"robot other-0123456789abcdef read " + token + "/",
       "prefix of 24 characters (not shown: it could be a token) is not"},
  };
  for (const Case& c : cases) {
    const std::string error = ErrorOf(c.line);
    EXPECT_NE(error.find(c.expected), std::string::npos)
        << "line: " << c.line << "\nerror: " << error;
    EXPECT_EQ(error.find(token), std::string::npos) << error;
  }
}

TEST(AccessTokensTest, TokensWithControlCharactersAreRefused) {
  const std::string error = ErrorOf("robot secret\x01-0123456789abcdef read *");
  EXPECT_NE(error.find("not printable ASCII"), std::string::npos) << error;
}

TEST(AccessTokensTest, LoadNamesTheFlagAndThePath) {
  absl::StatusOr<AccessTokens> tokens =
      AccessTokens::Load("/nonexistent/tokens.txt");
  ASSERT_FALSE(tokens.ok());
  EXPECT_NE(
      tokens.status().message().find("--auth_tokens /nonexistent/tokens.txt"),
      std::string::npos)
      << tokens.status();
}

// A table of secrets that every user may read (or add a token to) is
// refused, naming the flag, the path and the mode; the owner's (and a
// group's read) is loaded.
TEST(AccessTokensTest, LoadRefusesATableEveryUserMayReadOrWrite) {
  const std::string path = FreshDirectory() + "/tokens";
  std::ofstream(path) << "robot robot-0123456789abcdef read *\n";
  struct Case {
    mode_t mode;
    const char* error;  // empty: loaded
  };
  for (const Case& c : {Case{0644, "readable by every user (mode 0644)"},
                        Case{0602, "writable by every user (mode 0602)"},
                        Case{0666, "readable and writable by every user"},
                        Case{0600, ""}, Case{0640, ""}, Case{0400, ""}}) {
    ASSERT_EQ(::chmod(path.c_str(), c.mode), 0);
    absl::StatusOr<AccessTokens> tokens = AccessTokens::Load(path);
    if (*c.error == '\0') {
      EXPECT_TRUE(tokens.ok()) << c.mode << ": " << tokens.status();
      continue;
    }
    ASSERT_FALSE(tokens.ok()) << c.mode;
    EXPECT_TRUE(absl::IsFailedPrecondition(tokens.status())) << tokens.status();
    const std::string message(tokens.status().message());
    EXPECT_NE(message.find(c.error), std::string::npos) << message;
    EXPECT_NE(message.find("--auth_tokens " + path), std::string::npos)
        << message;
  }
}

TEST(AccessTokensTest, DigestsAreSha256) {
  // FIPS 180-2 test vector: SHA-256("abc").
  const TokenDigest digest = DigestOfToken("abc");
  EXPECT_EQ(digest[0], 0xba);
  EXPECT_EQ(digest[1], 0x78);
  EXPECT_EQ(digest[30], 0x15);
  EXPECT_EQ(digest[31], 0xad);
}

}  // namespace
}  // namespace streamreg
