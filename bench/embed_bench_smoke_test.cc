// Runs the real `zygo bench embed --quick` and checks it reports the three runners, their
// ratios and the bar, and removes its supervisor's directory. Never its speed.
#include <sys/stat.h>
#include <unistd.h>

#include <regex>
#include <string>

#include "gtest/gtest.h"
#include "testing/harness.h"

namespace zygo::bench {
namespace {

using ::zygo::testing::RunOnHost;
using ::zygo::testing::RunOptions;
using ::zygo::testing::RunResult;
using ::zygo::testing::ZygoPath;

bool Has(const std::string& out, const std::string& pattern) {
  return std::regex_search(out, std::regex(pattern));
}

TEST(EmbedBenchSmoke, ReportsThreeRunnersRatiosAndTheBar) {
  if (geteuid() != 0) GTEST_SKIP() << "requires_root: the supervisor makes cgroups";
  if (access("/usr/bin/bwrap", X_OK) != 0) GTEST_SKIP() << "needs bubblewrap at /usr/bin/bwrap";
  RunOptions options;
  options.timeout_seconds = 50;
  RunResult result = RunOnHost({ZygoPath(), "bench", "embed", "--quick"}, options);
  ASSERT_EQ(result.exit_code, 0) << "stdout:\n" << result.out << "\nstderr:\n" << result.err;
  const std::string& out = result.out;
  EXPECT_TRUE(Has(out, "(^|\n)host: Linux [^\n]+ nproc [0-9]+")) << out;
  const std::string ms = " +[0-9]+\\.[0-9]{2}";
  for (const char* runner : {"zygo exec", "zygo run", "bwrap"}) {
    EXPECT_TRUE(Has(out, std::string("\n") + runner + " +5" + ms + ms + ms + ms + " +[0-9.]+x\n"))
        << runner << "\n" << out;
  }
  EXPECT_TRUE(Has(out, "\nzygo run / zygo exec: p50 [0-9.]+x; bwrap / zygo exec: p50 [0-9.]+x"))
      << out;
  EXPECT_TRUE(Has(out, "\nbar: bwrap / zygo exec p50 >= 40x: (PASS|FAIL) \\([0-9.]+x\\)\n")) << out;

  // The supervisor's directory (in the printed commands) is gone once the bench is.
  std::smatch dir;
  ASSERT_TRUE(std::regex_search(out, dir, std::regex("/tmp/zygo-bench-[A-Za-z0-9]{6}"))) << out;
  struct stat st;
  EXPECT_NE(stat(dir.str().c_str(), &st), 0) << dir.str() << " was left behind";
}

}  // namespace
}  // namespace zygo::bench
