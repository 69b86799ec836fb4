// Runs the real `zygo bench warm --pool --quick` and checks it reports the pool and the warm
// function side by side, both phase rows, the ratio and the bar. Never its speed.
#include <unistd.h>

#include <regex>
#include <string>

#include "bench/common/warm_smoke_testing.h"
#include "gtest/gtest.h"
#include "testing/harness.h"

namespace zygo::bench {
namespace {

using ::zygo::testing::RunResult;

TEST(WarmPoolBenchSmoke, ReportsPoolAgainstWarmFunction) {
  if (geteuid() != 0) GTEST_SKIP() << "requires_root: the supervisor makes cgroups";
  RunResult result = RunBench({"warm", "--pool", "--quick", "--scripts", "50"}, 50);
  ASSERT_EQ(result.exit_code, 0) << "stdout:\n" << result.out << "\nstderr:\n" << result.err;
  const std::string& out = result.out;
  EXPECT_TRUE(Has(out, kHostLine)) << out;
  EXPECT_TRUE(Has(out,
                  "\npool: runtime pool preloading the sixteen modules[^\n]+50 distinct "
                  "scripts"))
      << out;
  const std::string ms = " +[0-9]+\\.[0-9]{3}";
  for (const char* who : {"warm", "pool"}) {
    EXPECT_TRUE(Has(out, std::string("\n250/s open loop +") + who + " +300 +[0-9]+" + ms + ms + ms))
        << who << "\n"
        << out;
    EXPECT_TRUE(Has(out, std::string("\n250/s open loop ") + who + " +p50( +[0-9]+){5}\n"))
        << who << "\n"
        << out;
  }
  EXPECT_TRUE(Has(out, "\npool / warm function: p50 [0-9.]+x \\([+-][0-9.]+ ms\\)")) << out;
  EXPECT_TRUE(Has(out, "\nbar: pool p50 <= 1\\.35x warm p50: (PASS|FAIL) \\([0-9.]+x\\)\n")) << out;
  EXPECT_FALSE(Has(out, "bar: warm p50 <= 0\\.6x peer")) << "--pool measures no peer\n" << out;
}

}  // namespace
}  // namespace zygo::bench
