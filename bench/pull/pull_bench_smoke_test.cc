// Runs the real `zygo bench pull --no-python` briefly and checks it reports what it
// must (the host, both parts, every variant, the bytecode verdict) and leaves nothing
// behind, on success and on failure. Never its speed: a benchmark is not a timed unit
// test, and a slow or busy test machine must not fail this.
#include <stdlib.h>
#include <unistd.h>

#include <regex>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "testing/harness.h"

namespace zygo::bench {
namespace {

using ::zygo::testing::ProcessesMatching;
using ::zygo::testing::RunOnHost;
using ::zygo::testing::RunOptions;
using ::zygo::testing::RunResult;
using ::zygo::testing::ZygoPath;

// The runfiles tree holds testing/registry and tools/images (this target's data).
std::string Tree() {
  const char* root = getenv("TEST_SRCDIR");
  return std::string(root != nullptr ? root : ".") + "/zygo";
}

bool Contains(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

bool Matches(const std::string& text, const std::string& pattern) {
  return std::regex_search(text, std::regex(pattern));
}

// The path the report printed after `label` ("scratch: /tmp/zygo-bench-pull.x (ext4)").
std::string PrintedPath(const std::string& out, const std::string& label) {
  std::smatch match;
  if (!std::regex_search(out, match, std::regex("\n" + label + " (/[^ \n]+)"))) return "";
  return match[1];
}

void ExpectNothingLeftBehind(const std::string& out) {
  const std::string scratch = PrintedPath(out, "scratch:");
  ASSERT_FALSE(scratch.empty()) << out;
  EXPECT_NE(access(scratch.c_str(), F_OK), 0) << "left behind: " << scratch;
  std::smatch match;
  ASSERT_TRUE(std::regex_search(out, match, std::regex("\\), state in (/[^ ]+) \\("))) << out;
  const std::string registry_dir = match[1];
  EXPECT_NE(access(registry_dir.c_str(), F_OK), 0) << "left behind: " << registry_dir;
  EXPECT_TRUE(ProcessesMatching(registry_dir).empty()) << "the registry still runs";
}

RunResult Bench(const std::vector<std::string>& flags) {
  std::vector<std::string> argv = {ZygoPath(), "bench", "pull", "--tree", Tree()};
  argv.insert(argv.end(), flags.begin(), flags.end());
  RunOptions options;
  options.timeout_seconds = 240;
  return RunOnHost(argv, options);
}

TEST(PullBenchSmoke, ReportsBothPartsEveryVariantAndCleansUp) {
  if (geteuid() != 0) GTEST_SKIP() << "requires_root: zygo run needs a cgroup of its own";
  RunResult result = Bench({"--no-python", "--runs", "2"});
  ASSERT_EQ(result.exit_code, 0) << "stdout:\n" << result.out << "\nstderr:\n" << result.err;
  const std::string& out = result.out;
  EXPECT_TRUE(Matches(out, "(^|\n)host: Linux [^\n]+ nproc [0-9]+")) << out;
  EXPECT_TRUE(Matches(out, "\n== 1\\. pull and unpack 127\\.0\\.0\\.1:[0-9]+/busybox:bench\n"))
      << out;
  for (const char* variant : {"zygo cold", "zygo warm", "skopeo\\+umoci"}) {
    EXPECT_TRUE(Matches(out, std::string("\npull\\+unpack +") + variant +
                                 " +2 +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+x +[0-9.]+x\n"))
        << variant << "\n"
        << out;
  }
  EXPECT_TRUE(Matches(out,
                      "\nskopeo\\+umoci by step, p50 / p99: skopeo copy [0-9.]+ / [0-9.]+ "
                      "ms, umoci unpack [0-9.]+ / [0-9.]+ ms\n"))
      << out;
  EXPECT_TRUE(Contains(out, "\n== 2. one-shot `true` in busybox:bench\n")) << out;
  for (const char* variant : {"zygo ZYGO_BYTECODE=0", "zygo default", "bwrap"}) {
    EXPECT_TRUE(Matches(out, std::string("\ntrue +") + variant +
                                 " +2 +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+x +[0-9.]+x\n"))
        << variant << "\n"
        << out;
  }
  // Whether zygo has a bytecode layer is said, not assumed, in each part.
  EXPECT_TRUE(Matches(out, "\nbytecode layer: (built by that pull|none built by that pull)"))
      << out;
  EXPECT_TRUE(Matches(out, "\nbytecode layer: (EXISTS|NONE|unclear): ")) << out;
  EXPECT_TRUE(Matches(out, "\nother work: [0-9.]+ of [0-9]+ CPUs")) << out;
  ExpectNothingLeftBehind(out);
}

TEST(PullBenchSmoke, AFailingPeerStopsTheBenchAndStillCleansUp) {
  if (geteuid() != 0) GTEST_SKIP() << "requires_root: zygo run needs a cgroup of its own";
  // /bin/false is executable, so the bench starts everything and fails at the first
  // peer run: the path where the registry and the scratch directory must still go.
  RunResult result =
      Bench({"--no-python", "--runs", "1", "--warmup", "0", "--umoci", "/bin/false"});
  EXPECT_EQ(result.exit_code, 125) << result.out << result.err;
  EXPECT_TRUE(Contains(result.err, "umoci unpack exited 1")) << result.err;
  EXPECT_FALSE(Matches(result.out, "\npull\\+unpack +zygo cold +[0-9]")) << result.out;
  ExpectNothingLeftBehind(result.out);
}

TEST(PullBenchSmoke, ABadFlagIsZygosOwnFailure) {
  RunResult result = RunOnHost({ZygoPath(), "bench", "pull", "--runs", "zero"});
  EXPECT_EQ(result.exit_code, 125);
  EXPECT_TRUE(Contains(result.err, "--runs 'zero'")) << result.err;
}

}  // namespace
}  // namespace zygo::bench
