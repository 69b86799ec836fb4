// Runs the built `zygo bench bytecode --runs 2 --warmup 0` on the python test image and
// checks what it reports, never how fast: benchmarks are not timed tests.
#include <stdlib.h>

#include <filesystem>
#include <regex>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "testing/harness.h"

namespace zygo::testing {
namespace {

TEST(BytecodeBenchSmoke, ReportsBothWaysAndTheHost) {
  std::string store = absl::StrCat(getenv("TEST_TMPDIR"), "/store");
  std::filesystem::remove_all(store);
  RunOptions options;
  options.env = {"ZYGO_HOME=" + store};
  options.timeout_seconds = 600;
  RunResult built = RunOnHost(
      {absl::StrCat(getenv("TEST_SRCDIR"), "/zygo/tools/images/build"), "python"}, options);
  std::smatch image;
  if (built.exit_code != 0 || !std::regex_search(built.out, image, std::regex("IMAGE=([^ ]+)"))) {
    GTEST_SKIP() << "tools/images/build python failed (needs root and the Debian mirror): "
                 << built.err;
  }
  ASSERT_EQ(RunOnHost({ZygoPath(), "load", image[1], "py:bench"}, options).exit_code, 0);
  RunResult bench = RunOnHost(
      {ZygoPath(), "bench", "bytecode", "--image", "py:bench", "--runs", "2", "--warmup", "0"},
      options);
  ASSERT_EQ(bench.exit_code, 0) << bench.out << bench.err;
  EXPECT_TRUE(absl::StartsWith(bench.out, "host: Linux ")) << bench.out;
  EXPECT_TRUE(absl::StrContains(bench.out, "py:bench+bytecode.")) << bench.out;
  EXPECT_TRUE(absl::StrContains(bench.out, " .pyc files, ")) << bench.out;
  size_t first = bench.out.find("without bytecode layer");
  size_t whole = bench.out.find("the whole");
  ASSERT_NE(whole, std::string::npos) << bench.out;
  EXPECT_LT(first, whole) << "a row in the imports table: " << bench.out;
  EXPECT_GT(bench.out.rfind("without bytecode layer"), whole) << "and in the run table";
  EXPECT_TRUE(absl::StrContains(bench.out, "with bytecode layer")) << bench.out;
  // A second run finds the layer built.
  RunResult again = RunOnHost(
      {ZygoPath(), "bench", "bytecode", "--image", "py:bench", "--runs", "1", "--warmup", "0"},
      options);
  EXPECT_TRUE(absl::StrContains(again.out, "(already built)")) << again.out << again.err;
  RunResult missing = RunOnHost({ZygoPath(), "bench", "bytecode", "--image", "nope:1"}, options);
  EXPECT_EQ(missing.exit_code, 125);
}

}  // namespace
}  // namespace zygo::testing
