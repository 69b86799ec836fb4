// Runs the real `zygo bench cold` briefly and checks it reports what it must: the
// host, both workloads, every variant and a verdict. Never its speed: a benchmark is
// not a timed unit test, and a slow or busy test machine must not fail this.
#include <unistd.h>

#include <fstream>
#include <regex>
#include <string>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "testing/harness.h"

namespace zygo::bench {
namespace {

using ::zygo::testing::RunOnHost;
using ::zygo::testing::RunResult;
using ::zygo::testing::ZygoPath;

constexpr char kBwrap[] = "/usr/bin/bwrap";

std::string TempFile(const char* name) {
  const char* dir = getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

bool Contains(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

TEST(ColdBenchSmoke, ReportsHostWorkloadsVariantsAndAVerdict) {
  if (geteuid() != 0) GTEST_SKIP() << "requires_root: zygo run needs a cgroup of its own";
  const bool have_bwrap = access(kBwrap, X_OK) == 0;
  const std::string json_path = TempFile("cold.json");
  std::vector<std::string> argv = {ZygoPath(), "bench", "cold",   "--runs", "5",
                                   "--warmup", "1",     "--json", json_path};
  if (!have_bwrap) argv.push_back("--no-peer");
  RunResult result = RunOnHost(argv);

  // 0 (bar met) and 1 (bar not met) are both a bench that worked; which one is a
  // matter of speed and is deliberately not checked.
  ASSERT_TRUE(result.exit_code == 0 || result.exit_code == 1)
      << "exit " << result.exit_code << "\nstdout:\n"
      << result.out << "\nstderr:\n"
      << result.err;
  const std::string& out = result.out;
  EXPECT_TRUE(std::regex_search(out, std::regex("(^|\n)host: Linux [^\n]+ nproc [0-9]+"))) << out;
  EXPECT_TRUE(Contains(out, "cgroup ")) << out;
  EXPECT_TRUE(Contains(out, "/bin/true")) << out;
  EXPECT_TRUE(Contains(out, "/usr/bin/python3 -c pass")) << out;
  EXPECT_TRUE(std::regex_search(out, std::regex("\n/bin/true +zygo +5 "))) << out;
  EXPECT_TRUE(std::regex_search(out, std::regex("\n/bin/true +bare +5 "))) << out;
  if (have_bwrap) {
    EXPECT_TRUE(std::regex_search(out, std::regex("\n/bin/true +bwrap +5 "))) << out;
    EXPECT_TRUE(std::regex_search(
        out, std::regex("\nbar: zygo /bin/true p50 <= 1\\.0x bubblewrap: (MET|NOT MET) "
                        "\\([0-9.]+x\\)\n")))
        << out;
  } else {
    EXPECT_TRUE(Contains(out, "bar: zygo /bin/true p50 <= 1.0x bubblewrap: NOT MEASURED")) << out;
  }

  std::ifstream file(json_path);
  ASSERT_TRUE(file.good()) << "no --json file at " << json_path;
  nlohmann::json json = nlohmann::json::parse(file, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(json.is_discarded());
  ASSERT_EQ(json["cases"].size(), have_bwrap ? 6u : 4u);
  for (const auto& c : json["cases"]) EXPECT_EQ(c["samples_ms"].size(), 5u) << c["variant"];
}

TEST(ColdBenchSmoke, ABadFlagIsZygosOwnFailure) {
  RunResult result = RunOnHost({ZygoPath(), "bench", "cold", "--runs", "zero"});
  EXPECT_EQ(result.exit_code, 125);
  EXPECT_TRUE(Contains(result.err, "--runs 'zero'")) << result.err;
}

TEST(ColdBenchSmoke, AMissingPeerIsNotAVerdict) {
  RunResult result =
      RunOnHost({ZygoPath(), "bench", "cold", "--runs", "1", "--bwrap", "/nonexistent/bwrap"});
  EXPECT_EQ(result.exit_code, 125);
  EXPECT_TRUE(Contains(result.out, "peer could not be measured")) << result.out;
  EXPECT_FALSE(Contains(result.out, "bar:")) << result.out;
}

}  // namespace
}  // namespace zygo::bench
