// Runs the real `zygo bench load --quick` and checks it reports nproc, rps and latency for
// zygo and the peer, the ratio and the bar. Never its speed.
#include <unistd.h>

#include <regex>
#include <string>

#include "bench/common/warm_smoke_testing.h"
#include "gtest/gtest.h"
#include "testing/harness.h"

namespace zygo::bench {
namespace {

using ::zygo::testing::RunResult;

TEST(LoadBenchSmoke, ReportsRequestsPerSecondForBothSides) {
  if (geteuid() != 0) GTEST_SKIP() << "requires_root: the supervisor makes cgroups";
  if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "needs /usr/bin/python3";
  RunResult result = RunBench({"load", "--quick", "--connections", "4"}, 50);
  ASSERT_EQ(result.exit_code, 0) << "stdout:\n" << result.out << "\nstderr:\n" << result.err;
  const std::string& out = result.out;
  EXPECT_TRUE(Has(out, kHostLine)) << out;
  EXPECT_TRUE(Has(out, "\nwho +connections +seconds +requests +rps +p50 ms +p99 ms +max ms\n"))
      << out;
  for (const char* who : {"zygo", "peer"}) {
    EXPECT_TRUE(Has(out, std::string("\n") + who +
                             " +4 +[0-9.]+ +[1-9][0-9]* +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+\n"))
        << who << "\n"
        << out;
  }
  EXPECT_TRUE(Has(out, "\nzygo / peer: [0-9.]+x the requests per second\n")) << out;
  EXPECT_TRUE(Has(out,
                  "\nbar: >= 1000 requests/s through one function \\(nproc [0-9]+\\): "
                  "(PASS|FAIL) \\([0-9]+ requests/s\\)\n"))
      << out;
}

}  // namespace
}  // namespace zygo::bench
