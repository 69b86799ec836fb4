#include "bench/pull/pull_report.h"

#include "gtest/gtest.h"

namespace zygo::bench {
namespace {

CaseResult Case(const std::string& workload, const std::string& variant, double p50, double p99) {
  CaseResult r{workload, variant, {p50, p99}, {}};
  r.summary.count = 2;
  r.summary.p50 = p50;
  r.summary.p90 = p99;
  r.summary.p99 = p99;
  r.summary.mean = (p50 + p99) / 2;
  return r;
}

TEST(FormatPeerTable, RatiosAreToThePeerOfTheSameWorkload) {
  std::vector<CaseResult> results = {Case("pull+unpack", "zygo cold", 1000, 1500),
                                     Case("pull+unpack", "skopeo+umoci", 2000, 3000),
                                     Case("python3 -c pass", "zygo", 15, 20)};
  std::string table = FormatPeerTable(results, "skopeo+umoci");
  EXPECT_NE(table.find("p50/peer"), std::string::npos) << table;
  EXPECT_NE(table.find("\npull+unpack      zygo cold        2   1000.00   1500.00   1500.00   "
                       "1250.00     0.50x     0.50x\n"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("\npull+unpack      skopeo+umoci     2   2000.00"), std::string::npos)
      << table;
  EXPECT_NE(table.find("1.00x     1.00x\n"), std::string::npos) << table;
  // No peer ran for this workload: no ratio, rather than a made-up one.
  EXPECT_NE(table.find("17.50         -         -\n"), std::string::npos) << table;
}

TEST(FormatSteps, NamesEachStep) {
  Summary copy;
  copy.p50 = 250.1;
  copy.p99 = 300.25;
  Summary unpack;
  unpack.p50 = 2000;
  unpack.p99 = 2100;
  EXPECT_EQ(FormatSteps("skopeo+umoci", {"skopeo copy", "umoci unpack"}, {copy, unpack}),
            "skopeo+umoci by step, p50 / p99: skopeo copy 250.10 / 300.25 ms, umoci unpack "
            "2000.00 / 2100.00 ms");
  EXPECT_EQ(FormatSteps("zygo", {}, {}), "");
}

}  // namespace
}  // namespace zygo::bench
