#include "bench/cold/cold_report.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace zygo::bench {
namespace {

CaseResult Case(const std::string& workload, const std::string& variant, double p50, double p99) {
  CaseResult result{workload, variant, {p50, p99}, {}};
  result.summary = *Summarize(result.samples_ms);
  result.summary.p50 = p50;  // fixed values, so the ratios below are exact
  result.summary.p99 = p99;
  return result;
}

std::vector<CaseResult> Results(double zygo_p50, double bwrap_p50) {
  return {Case("/bin/true", "zygo", zygo_p50, 2 * zygo_p50),
          Case("/bin/true", "bwrap", bwrap_p50, 2 * bwrap_p50),
          Case("/bin/true", "bare", 1.0, 1.5)};
}

TEST(JudgeBar, MetWhenZygoIsNoSlower) {
  BarResult bar = JudgeBar(Results(9.3, 10.0), "unused");
  EXPECT_EQ(bar.verdict, BarVerdict::kMet);
  EXPECT_EQ(bar.line, "bar: zygo /bin/true p50 <= 1.0x bubblewrap: MET (0.93x)");
}

TEST(JudgeBar, NotMetWhenZygoIsSlower) {
  BarResult bar = JudgeBar(Results(12.1, 10.0), "unused");
  EXPECT_EQ(bar.verdict, BarVerdict::kNotMet);
  EXPECT_EQ(bar.line, "bar: zygo /bin/true p50 <= 1.0x bubblewrap: NOT MET (1.21x)");
}

TEST(JudgeBar, EqualIsMet) {
  EXPECT_EQ(JudgeBar(Results(10.0, 10.0), "unused").verdict, BarVerdict::kMet);
}

TEST(JudgeBar, AFigureThatRoundsToTheBarStillShowsWhyItMissed) {
  BarResult bar = JudgeBar(Results(10.04, 10.0), "unused");
  EXPECT_EQ(bar.verdict, BarVerdict::kNotMet);
  EXPECT_EQ(bar.line, "bar: zygo /bin/true p50 <= 1.0x bubblewrap: NOT MET (1.004x)");
}

TEST(JudgeBar, NotMeasuredWithoutThePeer) {
  std::vector<CaseResult> results = {Case("/bin/true", "zygo", 9, 12),
                                     Case("/bin/true", "bare", 1, 2)};
  BarResult bar = JudgeBar(results, "--no-peer");
  EXPECT_EQ(bar.verdict, BarVerdict::kNotMeasured);
  EXPECT_FALSE(bar.p50_ratio.has_value());
  EXPECT_EQ(bar.line, "bar: zygo /bin/true p50 <= 1.0x bubblewrap: NOT MEASURED (--no-peer)");
}

TEST(FormatTable, ShowsEveryCaseAndItsRatioToBubblewrap) {
  std::string table = FormatTable(Results(12.0, 10.0));
  EXPECT_NE(table.find("p50/bwrap"), std::string::npos);
  EXPECT_NE(table.find("1.20x"), std::string::npos);  // zygo p50 and p99 over bwrap's
  EXPECT_NE(table.find("1.00x"), std::string::npos);  // bwrap over itself
  EXPECT_NE(table.find("0.10x"), std::string::npos);  // bare p50 1.0 over 10.0
  EXPECT_NE(table.find("bare"), std::string::npos);
}

TEST(FormatTable, DashesWithoutAPeer) {
  std::string table = FormatTable({Case("/bin/true", "zygo", 9, 12)});
  EXPECT_NE(table.find(" -"), std::string::npos);
  EXPECT_EQ(table.find("x\n"), std::string::npos);
}

TEST(FormatOverheads, SubtractsTheBareRun) {
  EXPECT_EQ(FormatOverheads(Results(12.0, 10.0)),
            "sandbox cost over bare, p50: /bin/true zygo +11.00 ms bwrap +9.00 ms");
}

TEST(ResultsToJson, CarriesTheSamplesAndTheVerdict) {
  std::vector<CaseResult> results = Results(9.3, 10.0);
  nlohmann::ordered_json json = ResultsToJson(results, JudgeBar(results, "unused"));
  EXPECT_EQ(json["cases"].size(), 3u);
  EXPECT_EQ(json["cases"][0]["samples_ms"].size(), 2u);
  EXPECT_EQ(json["bar"]["verdict"], "MET");
  EXPECT_NEAR(json["bar"]["p50_ratio"].get<double>(), 0.93, 1e-9);
}

}  // namespace
}  // namespace zygo::bench
