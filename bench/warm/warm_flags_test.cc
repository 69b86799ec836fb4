// The warm-path benches' flags: defaults, --quick only where not given, per-bench flags.
#include "bench/warm/warm_flags.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace zygo::bench {
namespace {

absl::StatusOr<WarmOptions> Parse(WarmBenchKind kind, std::vector<std::string> args) {
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  return ParseWarmFlags(kind, static_cast<int>(argv.size()), argv.data());
}

TEST(WarmFlags, DefaultsAreTheFullRun) {
  absl::StatusOr<WarmOptions> o = Parse(WarmBenchKind::kWarm, {});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->requests, 3000);
  EXPECT_EQ(o->rate, 250);
  EXPECT_EQ(o->slow_requests, 200);
  EXPECT_EQ(o->slow_interval_ms, 100);
  EXPECT_EQ(o->forks, 1000);
  EXPECT_FALSE(o->pool);
  EXPECT_FALSE(o->strict);
  EXPECT_EQ(o->python, "/usr/bin/python3");
}

TEST(WarmFlags, QuickShrinksOnlyWhatWasNotGiven) {
  absl::StatusOr<WarmOptions> o =
      Parse(WarmBenchKind::kWarm, {"--requests", "50", "--quick", "--pool"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->requests, 50);
  EXPECT_EQ(o->slow_requests, 20);
  EXPECT_EQ(o->scripts, 100);
  EXPECT_TRUE(o->pool);

  absl::StatusOr<WarmOptions> scripts =
      Parse(WarmBenchKind::kWarm, {"--quick", "--pool", "--scripts=7"});
  ASSERT_TRUE(scripts.ok()) << scripts.status();
  EXPECT_EQ(scripts->scripts, 7);
}

TEST(WarmFlags, EachBenchHasItsQuickDefaults) {
  absl::StatusOr<WarmOptions> load = Parse(WarmBenchKind::kLoad, {"--quick"});
  ASSERT_TRUE(load.ok());
  EXPECT_EQ(load->seconds, 3);
  EXPECT_EQ(load->connections, 8);
  absl::StatusOr<WarmOptions> density = Parse(WarmBenchKind::kDensity, {"--quick"});
  ASSERT_TRUE(density.ok());
  EXPECT_EQ(density->counts, (std::vector<int>{1, 2, 4}));
  absl::StatusOr<WarmOptions> embed = Parse(WarmBenchKind::kEmbed, {"--quick"});
  ASSERT_TRUE(embed.ok());
  EXPECT_EQ(embed->runs, 5);
}

TEST(WarmFlags, AFlagOfAnotherBenchIsRefused) {
  absl::StatusOr<WarmOptions> o = Parse(WarmBenchKind::kLoad, {"--requests", "5"});
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("--requests"), std::string::npos) << o.status();
  EXPECT_NE(o.status().message().find("zygo bench load --help"), std::string::npos);
  EXPECT_FALSE(Parse(WarmBenchKind::kDensity, {"--pool"}).ok());
  EXPECT_FALSE(Parse(WarmBenchKind::kWarm, {"--scripts", "10"}).ok()) << "--scripts needs --pool";
}

TEST(WarmFlags, DumpIsAWarmFlagAndNeedsAName) {
  absl::StatusOr<WarmOptions> o = Parse(WarmBenchKind::kWarm, {"--dump", "/tmp/requests.csv"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->dump, "/tmp/requests.csv");
  EXPECT_TRUE(Parse(WarmBenchKind::kWarm, {}).value().dump.empty());
  EXPECT_FALSE(Parse(WarmBenchKind::kWarm, {"--dump="}).ok());
  EXPECT_FALSE(Parse(WarmBenchKind::kEmbed, {"--dump", "x.csv"}).ok());
}

TEST(WarmFlags, RuntimeNodeRunsTheSpacedScheduleOnly) {
  absl::StatusOr<WarmOptions> o =
      Parse(WarmBenchKind::kWarm, {"--runtime", "node", "--quick", "--node=/opt/node"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->runtime, "node");
  EXPECT_EQ(o->node, "/opt/node");
  EXPECT_EQ(o->slow_requests, 20);
  EXPECT_EQ(Parse(WarmBenchKind::kWarm, {}).value().runtime, "python");
  EXPECT_EQ(Parse(WarmBenchKind::kWarm, {}).value().node, "/usr/bin/node");
  for (const char* flag : {"--pool", "--requests=9", "--rate=9"}) {
    absl::StatusOr<WarmOptions> refused = Parse(WarmBenchKind::kWarm, {"--runtime=node", flag});
    ASSERT_FALSE(refused.ok()) << flag;
    EXPECT_NE(refused.status().message().find("not for --runtime node"), std::string::npos)
        << refused.status();
  }
  EXPECT_FALSE(Parse(WarmBenchKind::kWarm, {"--runtime", "ruby"}).ok());
  EXPECT_FALSE(Parse(WarmBenchKind::kWarm, {"--node", "/opt/node"}).ok()) << "without node";
  EXPECT_FALSE(Parse(WarmBenchKind::kLoad, {"--runtime", "node"}).ok()) << "warm's flag only";
}

TEST(WarmFlags, BadValuesSayWhatIsExpected) {
  absl::StatusOr<WarmOptions> rate = Parse(WarmBenchKind::kWarm, {"--rate", "0"});
  ASSERT_FALSE(rate.ok());
  EXPECT_NE(rate.status().message().find("--rate '0'"), std::string::npos) << rate.status();
  EXPECT_FALSE(Parse(WarmBenchKind::kWarm, {"--requests", "many"}).ok());
  EXPECT_FALSE(Parse(WarmBenchKind::kLoad, {"--connections", "65"}).ok());
  EXPECT_FALSE(Parse(WarmBenchKind::kDensity, {"--counts", "1"}).ok()) << "one point has no slope";
  EXPECT_FALSE(Parse(WarmBenchKind::kDensity, {"--counts", "4,2"}).ok()) << "not ascending";
  absl::StatusOr<WarmOptions> counts = Parse(WarmBenchKind::kDensity, {"--counts=1,3,9"});
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->counts, (std::vector<int>{1, 3, 9}));
  EXPECT_FALSE(Parse(WarmBenchKind::kEmbed, {"--runs"}).ok()) << "a flag without its value";
}

TEST(WarmFlags, HelpNamesTheBench) {
  EXPECT_NE(std::string(WarmUsage(WarmBenchKind::kWarm)).find("zygo bench warm"),
            std::string::npos);
  EXPECT_NE(std::string(WarmUsage(WarmBenchKind::kEmbed)).find("--quick"), std::string::npos);
  absl::StatusOr<WarmOptions> o = Parse(WarmBenchKind::kDensity, {"--help"});
  ASSERT_TRUE(o.ok());
  EXPECT_TRUE(o->help);
}

}  // namespace
}  // namespace zygo::bench
