// Runs the real `zygo bench net --runs 2` and checks the shape of what it reports: the
// host, both tables with every row, the note on pasta. Never its speed.
#include <unistd.h>

#include <regex>
#include <string>

#include "gtest/gtest.h"
#include "testing/harness.h"

namespace zygo::bench {
namespace {

using ::zygo::testing::RunOnHost;
using ::zygo::testing::RunResult;
using ::zygo::testing::ZygoPath;

TEST(NetBenchSmoke, ReportsHostBothTablesAndTheNote) {
  if (geteuid() != 0) GTEST_SKIP() << "requires_root: the bench makes network namespaces";
  for (const char* tool : {"/usr/bin/pasta", "/usr/bin/python3", "/usr/bin/setpriv",
                           "/usr/bin/unshare", "/usr/bin/nsenter", "/usr/sbin/ip"}) {
    if (access(tool, X_OK) != 0) GTEST_SKIP() << "needs " << tool;
  }
  RunResult result = RunOnHost({ZygoPath(), "bench", "net", "--runs", "2", "--warmup", "0"});
  ASSERT_EQ(result.exit_code, 0) << "stdout:\n" << result.out << "\nstderr:\n" << result.err;
  const std::string& out = result.out;
  EXPECT_TRUE(std::regex_search(out, std::regex("(^|\n)host: Linux [^\n]+ nproc [0-9]+"))) << out;
  const std::string number = " +[0-9]+\\.[0-9]+";
  for (const char* mode : {"none", "full", "egress"}) {
    EXPECT_TRUE(std::regex_search(
        out, std::regex(std::string("\n--net ") + mode + " +2" + number + number)))
        << mode << "\n"
        << out;
  }
  // What a mode adds over none, signed.
  EXPECT_TRUE(
      std::regex_search(out, std::regex("\n--net full +2" + number + number + " [+-][0-9.]+ ms\n")))
      << out;
  for (const char* row :
       {"machine directly: TCP connect", "sandbox --net full: TCP connect",
        "sandbox --net egress: first TCP connect", "machine directly: DNS query to the upstream",
        "sandbox --net egress: resolve via zygo's resolver",
        "sandbox --net egress: DNS answer to usable"}) {
    EXPECT_TRUE(
        std::regex_search(out, std::regex(std::string("\n") + row + " +2" + number + number)))
        << row << "\n"
        << out;
  }
  EXPECT_NE(out.find("pasta's start dominates"), std::string::npos) << out;
}

}  // namespace
}  // namespace zygo::bench
