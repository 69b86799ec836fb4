#include "bench/cold/cold_flags.h"

#include <vector>

#include "gtest/gtest.h"

namespace zygo::bench {
namespace {

absl::StatusOr<ColdOptions> Parse(std::vector<const char*> args) {
  return ParseColdFlags(static_cast<int>(args.size()), const_cast<char**>(args.data()));
}

TEST(ParseColdFlags, Defaults) {
  absl::StatusOr<ColdOptions> options = Parse({});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->runs, 200);
  EXPECT_EQ(options->warmup, 10);
  EXPECT_EQ(options->zygo, "");
  EXPECT_EQ(options->bwrap, "/usr/bin/bwrap");
  EXPECT_TRUE(options->json_path.empty());
  EXPECT_FALSE(options->no_peer);
  EXPECT_FALSE(options->help);
}

TEST(ParseColdFlags, SeparateAndJoinedValues) {
  absl::StatusOr<ColdOptions> options = Parse({"--runs", "5", "--warmup=1", "--zygo", "/z",
                                               "--bwrap=/b", "--json", "/o.json", "--no-peer"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->runs, 5);
  EXPECT_EQ(options->warmup, 1);
  EXPECT_EQ(options->zygo, "/z");
  EXPECT_EQ(options->bwrap, "/b");
  EXPECT_EQ(options->json_path, "/o.json");
  EXPECT_TRUE(options->no_peer);
}

TEST(ParseColdFlags, ZeroWarmupIsAllowedButZeroRunsIsNot) {
  EXPECT_TRUE(Parse({"--warmup", "0"}).ok());
  absl::StatusOr<ColdOptions> no_runs = Parse({"--runs", "0"});
  ASSERT_FALSE(no_runs.ok());
  EXPECT_NE(no_runs.status().message().find("--runs '0'"), std::string::npos);
}

TEST(ParseColdFlags, RejectsBadInputWithTheReason) {
  EXPECT_FALSE(Parse({"--runs", "ten"}).ok());
  EXPECT_FALSE(Parse({"--runs", "-3"}).ok());
  EXPECT_FALSE(Parse({"--runs"}).ok());
  EXPECT_FALSE(Parse({"--zygo="}).ok());
  absl::StatusOr<ColdOptions> unknown = Parse({"--fast"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("'--fast'"), std::string::npos);
  EXPECT_FALSE(Parse({"warm"}).ok());
}

TEST(ParseColdFlags, Help) {
  EXPECT_TRUE(Parse({"--help"})->help);
  EXPECT_TRUE(Parse({"-h"})->help);
}

}  // namespace
}  // namespace zygo::bench
