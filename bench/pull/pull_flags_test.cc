#include "bench/pull/pull_flags.h"

#include <vector>

#include "gtest/gtest.h"

namespace zygo::bench {
namespace {

absl::StatusOr<PullOptions> Parse(std::vector<const char*> args) {
  return ParsePullFlags(static_cast<int>(args.size()), const_cast<char**>(args.data()));
}

TEST(ParsePullFlags, Defaults) {
  absl::StatusOr<PullOptions> options = Parse({});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->pull_runs, 10);
  EXPECT_EQ(options->pull_warmup, 1);
  EXPECT_EQ(options->oneshot_runs, 100);
  EXPECT_EQ(options->oneshot_warmup, 5);
  EXPECT_FALSE(options->no_python);
  EXPECT_EQ(options->zygo, "");
  EXPECT_EQ(options->bwrap, "/usr/bin/bwrap");
  EXPECT_EQ(options->skopeo, "/usr/bin/skopeo");
  EXPECT_EQ(options->umoci, "/usr/bin/umoci");
  EXPECT_TRUE(options->tree.empty());
  EXPECT_FALSE(options->help);
}

TEST(ParsePullFlags, RunsSetsBothPartsAndTheLastFlagWins) {
  absl::StatusOr<PullOptions> both = Parse({"--runs", "2", "--no-python"});
  ASSERT_TRUE(both.ok()) << both.status();
  EXPECT_EQ(both->pull_runs, 2);
  EXPECT_EQ(both->oneshot_runs, 2);
  EXPECT_TRUE(both->no_python);
  absl::StatusOr<PullOptions> split = Parse({"--runs=2", "--oneshot-runs=50"});
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_EQ(split->pull_runs, 2);
  EXPECT_EQ(split->oneshot_runs, 50);
}

TEST(ParsePullFlags, PathsAndWarmup) {
  absl::StatusOr<PullOptions> options = Parse({"--zygo", "/z", "--bwrap=/b", "--skopeo", "/s",
                                               "--umoci=/u", "--tree", "/t", "--warmup", "0"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->zygo, "/z");
  EXPECT_EQ(options->bwrap, "/b");
  EXPECT_EQ(options->skopeo, "/s");
  EXPECT_EQ(options->umoci, "/u");
  EXPECT_EQ(options->tree, "/t");
  EXPECT_EQ(options->pull_warmup, 0);
  EXPECT_EQ(options->oneshot_warmup, 0);
}

TEST(ParsePullFlags, RejectsBadValuesAndUnknownFlags) {
  absl::StatusOr<PullOptions> zero = Parse({"--runs", "0"});
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.status().message().find("--runs '0'"), std::string::npos) << zero.status();
  EXPECT_FALSE(Parse({"--pull-runs", "ten"}).ok());
  EXPECT_FALSE(Parse({"--warmup", "-1"}).ok());
  EXPECT_FALSE(Parse({"--tree"}).ok());
  EXPECT_FALSE(Parse({"--tree="}).ok());
  absl::StatusOr<PullOptions> unknown = Parse({"--fast"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("'--fast'"), std::string::npos);
}

TEST(ParsePullFlags, Help) {
  absl::StatusOr<PullOptions> options = Parse({"--help"});
  ASSERT_TRUE(options.ok());
  EXPECT_TRUE(options->help);
}

}  // namespace
}  // namespace zygo::bench
