// The warm benches' arithmetic and checks: the slope fit, bar verdicts, the open-loop
// schedule's pacing, and that a reply which is not the handler's is caught.
#include "bench/warm/warm_report.h"

#include <unistd.h>

#include <string>
#include <vector>

#include "bench/warm/warm_driver.h"
#include "bench/warm/warm_workload.h"
#include "gtest/gtest.h"

namespace zygo::bench {
namespace {

TEST(FitLine, RecoversAnExactLineAndNeedsTwoDistinctX) {
  absl::StatusOr<LineFit> fit = FitLine({1, 2, 4, 8}, {110, 120, 140, 180});
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_DOUBLE_EQ(fit->slope, 10);
  EXPECT_DOUBLE_EQ(fit->intercept, 100);
  // A flat series has slope 0 whatever its level: what the pool's bar expects.
  absl::StatusOr<LineFit> flat = FitLine({1, 2, 4, 8, 16}, {5000, 5000, 5000, 5000, 5000});
  ASSERT_TRUE(flat.ok());
  EXPECT_DOUBLE_EQ(flat->slope, 0);
  EXPECT_FALSE(FitLine({3}, {1}).ok());
  EXPECT_FALSE(FitLine({2, 2}, {1, 5}).ok());
}

TEST(Bars, PassAndFailAtTheLimit) {
  EXPECT_EQ(BarLine(Bar{"warm p50 <= 0.6x peer p50", 0.42, 0.6}),
            "bar: warm p50 <= 0.6x peer p50: PASS (0.42x)");
  EXPECT_EQ(BarLine(Bar{"x", 0.61, 0.6}), "bar: x: FAIL (0.61x)");
  EXPECT_TRUE((Bar{"x", 0.6, 0.6}).pass());
  EXPECT_EQ(BarLine(Bar{"zygo CPU per request <= 12 ms", 9.8, 12, "ms"}),
            "bar: zygo CPU per request <= 12 ms: PASS (9.80 ms)");
  EXPECT_EQ(BarLine(MinBar{"bwrap / zygo exec p50 >= 40x", 52.3, 40}),
            "bar: bwrap / zygo exec p50 >= 40x: PASS (52.3x)");
  EXPECT_FALSE((MinBar{"y", 39.9, 40}).pass());
}

TEST(OpenLoop, PacesRequestsAndCountsLateOnes) {
  std::vector<int> indexes;
  CallFn instant = [&](int index) -> absl::StatusOr<std::string> {
    indexes.push_back(index);
    return std::string("reply");
  };
  absl::StatusOr<OpenLoopResult> paced = RunOpenLoop(5, 10, 200, instant);  // 5 ms apart
  ASSERT_TRUE(paced.ok()) << paced.status();
  EXPECT_EQ(paced->latency_ms.size(), 10u);
  EXPECT_EQ(indexes.front(), 5);
  EXPECT_EQ(indexes.back(), 14);
  EXPECT_EQ(paced->late, 0);
  EXPECT_GE(paced->seconds, 0.045);  // the tenth is due 45 ms after the first

  CallFn slow = [](int) -> absl::StatusOr<std::string> {
    usleep(3000);
    return std::string("reply");
  };
  absl::StatusOr<OpenLoopResult> behind = RunOpenLoop(0, 5, 1000, slow);  // 1 ms apart
  ASSERT_TRUE(behind.ok());
  EXPECT_EQ(behind->late, 4);
  for (double ms : behind->latency_ms) EXPECT_GE(ms, 3.0);
}

TEST(OpenLoop, AFailedRequestStopsTheScheduleAndSaysWhich) {
  CallFn fails = [](int index) -> absl::StatusOr<std::string> {
    if (index == 2) return absl::UnavailableError("gone");
    return std::string("ok");
  };
  absl::StatusOr<OpenLoopResult> result = RunOpenLoop(0, 5, 1000, fails);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("request 3: gone"), std::string::npos);
}

TEST(ExecReplies, TimingsAreCollectedAndAWrongResultIsCaught) {
  const std::string good =
      R"({"ok":true,"result":{"n":0,"twice":0,"name":"bench","variant":0},)"
      R"("timings_us":{"fork":10,"admit":20,"run":300,"reply":40,"total":400}})";
  PhaseSamples phases;
  ASSERT_TRUE(CheckExecReplies({good}, &HandlerResultMatches, &phases).ok());
  EXPECT_EQ(phases.run_us, std::vector<double>{300});
  EXPECT_EQ(phases.total_us, std::vector<double>{400});

  // The second reply answers request 0's event again: not what request 1 asked for.
  absl::Status wrong = CheckExecReplies({good, good}, &HandlerResultMatches, &phases);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.message().find("reply 2"), std::string::npos) << wrong;
  EXPECT_FALSE(CheckExecReplies({R"({"ok":false,"error":{"type":"KeyError"}})"},
                                &HandlerResultMatches, &phases)
                   .ok());
  EXPECT_FALSE(CheckPeerReplies({"not json"}, &HandlerResultMatches).ok());
  EXPECT_TRUE(CheckPeerReplies({R"({"ok": true, "result": {"n": 0, "twice": 0, "name": "bench"}})"},
                               &HandlerResultMatches)
                  .ok());
}

TEST(Workload, SourcesImportSixteenModulesAndDiffer) {
  EXPECT_EQ(SixteenModules().size(), 16u);
  const std::string handler = HandlerSource(3);
  for (const std::string& module : SixteenModules()) {
    EXPECT_NE(handler.find("import " + module + "\n"), std::string::npos) << module;
    EXPECT_NE(EmbedScriptSource().find("import " + module + "\n"), std::string::npos) << module;
  }
  EXPECT_NE(HandlerSource(1), HandlerSource(2));
  EXPECT_NE(PoolScriptSource(1), PoolScriptSource(2));
  EXPECT_TRUE(
      PoolResultMatches(nlohmann::json::parse(R"({"script":7,"constant":"constant-7"})"), 7));
  EXPECT_FALSE(
      PoolResultMatches(nlohmann::json::parse(R"({"script":7,"constant":"constant-7"})"), 8));
  FunctionSpecOptions node{"fn", "handler.js:main"};
  node.runtime = "node";
  const std::string node_spec = FunctionSpecToml(node);
  EXPECT_NE(node_spec.find("runtime = \"node\"\n"), std::string::npos) << node_spec;
  EXPECT_NE(node_spec.find("entry = \"handler.js:main\"\n"), std::string::npos) << node_spec;
  EXPECT_NE(FunctionSpecToml({"fn", "handler.py:main"}).find("runtime = \"python\"\n"),
            std::string::npos);
  const std::string pool = FunctionSpecToml({"pool", "", true, true});
  EXPECT_NE(pool.find("pool = true"), std::string::npos);
  EXPECT_NE(pool.find("\"urllib.request\""), std::string::npos);
  EXPECT_EQ(pool.find("entry"), std::string::npos);
}

}  // namespace
}  // namespace zygo::bench
