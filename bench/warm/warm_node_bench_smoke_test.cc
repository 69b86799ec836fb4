// Runs the real `zygo bench warm --runtime node --quick` and checks it reports what it
// must: the host, the three sides on the spaced schedule, zygo's phases, CPU per request
// of each side, the ratios and both bars. Never its speed: PASS and FAIL are both a bench
// that worked.
#include <unistd.h>

#include <string>

#include "bench/common/warm_smoke_testing.h"
#include "gtest/gtest.h"
#include "testing/harness.h"

namespace zygo::bench {
namespace {

using ::zygo::testing::RunOnHost;
using ::zygo::testing::RunResult;
using ::zygo::testing::ZygoPath;

TEST(WarmNodeBenchSmoke, ReportsTheThreeSidesCpuRatiosAndBars) {
  if (geteuid() != 0) GTEST_SKIP() << "requires_root: the supervisor makes cgroups";
  if (access("/usr/bin/node", X_OK) != 0) GTEST_SKIP() << "needs /usr/bin/node";
  RunResult result = RunBench({"warm", "--runtime", "node", "--quick"}, 60);
  ASSERT_EQ(result.exit_code, 0) << "stdout:\n" << result.out << "\nstderr:\n" << result.err;
  const std::string& out = result.out;
  EXPECT_TRUE(Has(out, kHostLine)) << out;
  EXPECT_TRUE(Has(out, "\nmethod: function 'node' \\(runtime node[^\n]+/usr/bin/node \\(v[0-9]+"))
      << out;
  const std::string ms = " +[0-9]+\\.[0-9]{3}";
  for (const char* who : {"zygo", "spawn peer", "vm peer"}) {
    EXPECT_TRUE(Has(out, std::string("\n100 ms apart +") + who + " +20 +[0-9]+" + ms + ms + ms))
        << who << "\n"
        << out;
  }
  EXPECT_TRUE(Has(out, "\nphases \\(us\\) +fork +admit +run +reply +total\n")) << out;
  EXPECT_TRUE(Has(out, "\n100 ms apart +p50( +[0-9]+){5}\n +p99( +[0-9]+){5}\n")) << out;
  EXPECT_TRUE(Has(out,
                  "\nCPU per request [^\n]+: zygo [0-9.]+ ms \\(the supervisor process [0-9.]+ "
                  "ms, what it runs -?[0-9.]+ ms[^\n]+, spawn peer [0-9.]+ ms, vm peer [0-9.]+ "
                  "ms\n"))
      << out;
  EXPECT_TRUE(Has(out, "\nother work: ")) << out;
  for (const char* peer : {"spawn peer", "vm peer"}) {
    EXPECT_TRUE(Has(out, std::string("\nzygo / ") + peer +
                             ": p50 [0-9.]+x \\([-+][0-9.]+ ms\\), p99 [0-9.]+x \\([-+][0-9.]+ "
                             "ms\\), CPU [0-9.]+x \\([-+][0-9.]+ ms\\)\n"))
        << peer << "\n"
        << out;
  }
  EXPECT_TRUE(Has(out,
                  "\nbar: zygo p50 <= 0\\.1x spawn peer p50 \\(100 ms apart\\): (PASS|FAIL) "
                  "\\([0-9.]+x\\)\n"))
      << out;
  EXPECT_TRUE(Has(out, "\nbar: zygo CPU per request <= 12 ms: (PASS|FAIL) \\([0-9.]+ ms\\)\n"))
      << out;
}

TEST(WarmNodeBenchSmoke, APythonOnlyFlagIsRefused) {
  RunResult result = RunOnHost({ZygoPath(), "bench", "warm", "--runtime", "node", "--pool"});
  EXPECT_EQ(result.exit_code, 125);
  EXPECT_NE(result.err.find("--pool is not for --runtime node"), std::string::npos) << result.err;
}

}  // namespace
}  // namespace zygo::bench
