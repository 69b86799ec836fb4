// Runs the real `zygo bench density --quick` and checks it reports PSS for every checkpoint
// of all three sides (own sandboxes, the zygote tree, a pool), the slopes and the bars. Never how
// much memory: PASS and FAIL both count.
#include <unistd.h>

#include <regex>
#include <string>

#include "bench/common/warm_smoke_testing.h"
#include "gtest/gtest.h"
#include "testing/harness.h"

namespace zygo::bench {
namespace {

using ::zygo::testing::RunResult;

TEST(DensityBenchSmoke, ReportsCheckpointsSlopesAndTheBar) {
  if (geteuid() != 0) GTEST_SKIP() << "requires_root: the supervisor makes cgroups";
  RunResult result = RunBench({"density", "--quick"}, 50);
  ASSERT_EQ(result.exit_code, 0) << "stdout:\n" << result.out << "\nstderr:\n" << result.err;
  const std::string& out = result.out;
  EXPECT_TRUE(Has(out, kHostLine)) << out;
  const std::string mb = " +[1-9][0-9]*\\.[0-9]{2}";
  const std::string procs = " +[1-9][0-9]*";
  for (int n : {1, 2, 4}) {
    // Every checkpoint found processes on all three sides, with memory.
    EXPECT_TRUE(Has(
        out, "\n +" + std::to_string(n) + mb + mb + procs + mb + mb + procs + mb + procs + "\n"))
        << n << "\n"
        << out;
  }
  EXPECT_TRUE(Has(out, "\nper extra warm function, own sandbox: [+-][0-9]+ kB PSS")) << out;
  EXPECT_TRUE(Has(out, "\nper extra warm function, zygote tree: [+-][0-9]+ kB PSS")) << out;
  EXPECT_TRUE(Has(out, "\nper extra pooled script: [+-][0-9]+ kB PSS")) << out;
  EXPECT_TRUE(Has(out, "\nthe tree's slope / own sandboxes': [0-9.-]+x\n")) << out;
  EXPECT_TRUE(Has(out,
                  "\nwarm-up of functions 2..4 [^\n]*p50: own sandbox [0-9.]+ ms, zygote "
                  "tree [0-9.]+ ms"))
      << out;
  EXPECT_TRUE(Has(out,
                  "\nbar: pool slope <= ~0 kB per script \\(tolerance [0-9]+ kB[^\n]*: "
                  "(PASS|FAIL) \\([+-][0-9]+ kB per script\\)\n"))
      << out;
  EXPECT_TRUE(Has(out, "\nbar: zygote tree slope <= [0-9]+ kB per function: (PASS|FAIL)")) << out;
  EXPECT_TRUE(Has(out, "\nbar: zygote tree warm-up p50 < [0-9]+ ms: (PASS|FAIL)")) << out;
}

}  // namespace
}  // namespace zygo::bench
