// Runs the real `zygo bench net` with tiny counts (2 runs, 1 warm round, one 1 MiB stream
// per path) and checks the shape of what it reports: the host, every table with every
// row, the note on pasta, the supervisor's directory gone. Never its speed.
#include <unistd.h>

#include <string>

#include "bench/common/warm_smoke_testing.h"
#include "gtest/gtest.h"
#include "testing/harness.h"

namespace zygo::bench {
namespace {

using ::zygo::testing::RunResult;

TEST(NetBenchSmoke, ReportsHostEveryTableAndTheNote) {
  if (geteuid() != 0) GTEST_SKIP() << "requires_root: the bench makes network namespaces";
  for (const char* tool : {"/usr/bin/pasta", "/usr/bin/python3", "/usr/bin/setpriv",
                           "/usr/bin/unshare", "/usr/bin/nsenter", "/usr/sbin/ip"}) {
    if (access(tool, X_OK) != 0) GTEST_SKIP() << "needs " << tool;
  }
  RunResult result = RunBench({"net", "--runs", "2", "--warmup", "0", "--warm-rounds", "1",
                               "--throughput-runs", "1", "--throughput-mib", "1"},
                              240);
  ASSERT_EQ(result.exit_code, 0) << "stdout:\n" << result.out << "\nstderr:\n" << result.err;
  const std::string& out = result.out;
  EXPECT_TRUE(Has(out, kHostLine)) << out;
  const std::string number = " +[0-9]+\\.[0-9]+";
  const std::string added = " [+-][0-9.]+ ms\n";
  for (const std::string mode : {"none", "full", "egress"}) {
    EXPECT_TRUE(Has(out, "\n--net " + mode + " +2" + number + number)) << mode << "\n" << out;
  }
  // What a mode adds over none, signed.
  EXPECT_TRUE(Has(out, "\n--net full +2" + number + number + added)) << out;
  for (const char* row :
       {"machine directly: TCP connect", "sandbox --net full: TCP connect",
        "sandbox --net egress: first TCP connect", "machine directly: DNS query to the upstream",
        "sandbox --net egress: resolve via zygo's resolver",
        "sandbox --net egress: DNS answer to usable"}) {
    EXPECT_TRUE(Has(out, std::string("\n") + row + " +2" + number + number)) << row << "\n" << out;
  }
  // Throughput: MiB/s per path and its ratio to the machine's.
  EXPECT_TRUE(Has(out, "\nthroughput: 1 MiB over one TCP connection")) << out;
  EXPECT_TRUE(Has(out, "\nmachine directly +1" + number + number + " 1\\.00x\n")) << out;
  for (const char* path : {"sandbox --net full", "sandbox --net egress"}) {
    EXPECT_TRUE(Has(out, std::string("\n") + path + " +1" + number + number + " [0-9.]+x\n"))
        << path << "\n"
        << out;
  }
  // The warm half: each mode's warm-up, twice measured, and what it adds over none.
  for (const char* what :
       {"warm-up, the supervisor's own timer", "up to \"warm\" through the API"}) {
    EXPECT_TRUE(Has(out, std::string("\nnone: ") + what + " +1" + number + number + " -\n"))
        << what << "\n"
        << out;
    for (const std::string mode : {"egress", "full"}) {
      EXPECT_TRUE(Has(out, "\n" + mode + ": " + what + " +1" + number + number + added))
          << mode << ": " << what << "\n"
          << out;
    }
  }
  EXPECT_TRUE(Has(out, "\negress: warm request, resolve\\+connect in handler +1" + number + number +
                           " 1 of 1 connected\n"))
      << out;
  EXPECT_TRUE(Has(
      out, "\nfull: warm request, connect in handler +1" + number + number + " 1 of 1 connected\n"))
      << out;
  EXPECT_TRUE(Has(out, "pasta's start dominates")) << out;
  ExpectScratchDirsGone(out);
}

}  // namespace
}  // namespace zygo::bench
