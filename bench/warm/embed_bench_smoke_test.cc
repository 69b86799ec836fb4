// Runs the real `zygo bench embed --quick` and checks it reports the three runners, their
// ratios and the bar, and removes its supervisor's directory. Never its speed.
#include <sys/stat.h>
#include <unistd.h>

#include <regex>
#include <string>

#include "bench/common/warm_smoke_testing.h"
#include "gtest/gtest.h"
#include "testing/harness.h"

namespace zygo::bench {
namespace {

using ::zygo::testing::RunResult;

TEST(EmbedBenchSmoke, ReportsThreeRunnersRatiosAndTheBar) {
  if (geteuid() != 0) GTEST_SKIP() << "requires_root: the supervisor makes cgroups";
  if (access("/usr/bin/bwrap", X_OK) != 0) GTEST_SKIP() << "needs bubblewrap at /usr/bin/bwrap";
  RunResult result = RunBench({"embed", "--quick"}, 50);
  ASSERT_EQ(result.exit_code, 0) << "stdout:\n" << result.out << "\nstderr:\n" << result.err;
  const std::string& out = result.out;
  EXPECT_TRUE(Has(out, kHostLine)) << out;
  const std::string ms = " +[0-9]+\\.[0-9]{2}";
  for (const char* runner : {"zygo exec", "zygo run", "bwrap"}) {
    EXPECT_TRUE(Has(out, std::string("\n") + runner + " +5" + ms + ms + ms + ms + " +[0-9.]+x\n"))
        << runner << "\n"
        << out;
  }
  EXPECT_TRUE(Has(out, "\nzygo run / zygo exec: p50 [0-9.]+x; bwrap / zygo exec: p50 [0-9.]+x"))
      << out;
  EXPECT_TRUE(Has(out, "\nbar: bwrap / zygo exec p50 >= 40x: (PASS|FAIL) \\([0-9.]+x\\)\n")) << out;

  // The supervisor's directory (in the printed commands) is gone once the bench is.
  ExpectScratchDirsGone(out);
}

}  // namespace
}  // namespace zygo::bench
