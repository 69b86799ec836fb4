// Runs the real `zygo bench warm --quick` and checks it reports what it must: the host,
// both schedules for zygo and the peer, the phase table, the fork floor, the host's
// steadiness, the ratios, every bar and the --dump file. Never its speed: PASS and FAIL
// are both a bench that worked.
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <regex>
#include <string>

#include "bench/common/warm_smoke_testing.h"
#include "gtest/gtest.h"
#include "testing/harness.h"

namespace zygo::bench {
namespace {

using ::zygo::testing::RunOnHost;
using ::zygo::testing::RunResult;
using ::zygo::testing::ZygoPath;

TEST(WarmBenchSmoke, ReportsSchedulesPhasesFloorPeerAndBars) {
  if (geteuid() != 0) GTEST_SKIP() << "requires_root: the supervisor makes cgroups";
  if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "needs /usr/bin/python3";
  const std::string dump = std::string(getenv("TEST_TMPDIR")) + "/requests.csv";
  RunResult result = RunBench({"warm", "--quick", "--dump", dump}, 50);
  ASSERT_EQ(result.exit_code, 0) << "stdout:\n" << result.out << "\nstderr:\n" << result.err;
  const std::string& out = result.out;
  EXPECT_TRUE(Has(out, kHostLine)) << out;
  EXPECT_TRUE(Has(out, "\npeer: Python 3[^\n]+prefork_peer\\.py")) << out;
  const std::string ms = " +[0-9]+\\.[0-9]{3}";
  for (const char* who : {"zygo", "peer"}) {
    EXPECT_TRUE(Has(out, std::string("\n250/s open loop +") + who + " +300 +[0-9]+" + ms + ms + ms))
        << who << "\n"
        << out;
    EXPECT_TRUE(Has(out, std::string("\n100 ms apart +") + who + " +20 +[0-9]+" + ms + ms + ms))
        << who << "\n"
        << out;
  }
  EXPECT_TRUE(Has(out, "\nphases \\(us\\) +fork +admit +run +reply +total\n")) << out;
  EXPECT_TRUE(Has(out, "\n250/s open loop +p50( +[0-9]+){5}\n +p99( +[0-9]+){5}\n")) << out;
  EXPECT_TRUE(Has(out, "\nhost fork\\(\\)\\+wait\\(\\) floor: p50 [0-9]+ us, p99 [0-9]+ us"))
      << out;
  // Steadiness: --quick's 300 requests fill at least one 1 s window (a half may straddle
  // two) on a host that keeps up with 250/s; on one that does not, the sends spread out
  // and the line says so. Its 20 spaced ones fill no 5 s window, and the line says so
  // rather than printing a median of a few.
  EXPECT_TRUE(Has(out,
                  "\n  250/s open loop(, 1 s windows: zygo [0-9.]+-[0-9.]+ ms \\([0-9.]+x, "
                  "[0-9]+ windows?\\), peer [0-9.]+-[0-9.]+ ms|: not measured \\(no window of "
                  "1\\.0 s held 125 requests\\))"))
      << out;
  EXPECT_TRUE(
      Has(out, "\n  100 ms apart: not measured \\(no window of 5\\.0 s held 25 requests\\)"))
      << out;
  EXPECT_TRUE(Has(out, "\nzygo / peer \\(250/s open loop\\): p50 [0-9.]+x")) << out;
  // --dump: a header and a line per timed request, 300 + 20 on each side.
  EXPECT_TRUE(Has(out, "\nevery request: " + dump + " \\(sent_s counts from CLOCK_MONOTONIC"))
      << out;
  std::ifstream csv(dump);
  std::string line;
  int zygo_lines = 0, peer_lines = 0, lines = 0;
  while (std::getline(csv, line)) {
    ++lines;
    if (std::regex_match(line, std::regex("[^,]+,zygo,[0-9]+,[0-9.]+,[0-9.]+(,[0-9]+){5}")))
      ++zygo_lines;
    if (std::regex_match(line, std::regex("[^,]+,peer,[0-9]+,[0-9.]+,[0-9.]+,,,,,"))) ++peer_lines;
  }
  EXPECT_EQ(lines, 1 + 2 * 320);
  EXPECT_EQ(zygo_lines, 320);
  EXPECT_EQ(peer_lines, 320);
  for (const char* bar : {"warm p50 <= 0\\.6x peer p50 \\(250/s open loop\\)",
                          "warm p99 <= 2x warm p50 \\(250/s open loop\\)",
                          "warm p50 <= 0\\.6x peer p50 \\(100 ms apart\\)",
                          "warm p99 <= 2x warm p50 \\(100 ms apart\\)"}) {
    EXPECT_TRUE(Has(out, std::string("\nbar: ") + bar + ": (PASS|FAIL) \\([0-9.]+x\\)\n"))
        << bar << "\n"
        << out;
  }
}

TEST(WarmBenchSmoke, ABadFlagIsZygosOwnFailure) {
  RunResult result = RunOnHost({ZygoPath(), "bench", "warm", "--rate", "fast"});
  EXPECT_EQ(result.exit_code, 125);
  EXPECT_NE(result.err.find("--rate 'fast'"), std::string::npos) << result.err;
}

}  // namespace
}  // namespace zygo::bench
