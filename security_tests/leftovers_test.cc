// After many runs that end every way a run can end (ok, failed, killed by a signal,
// OOM-killed, timed out, failed setup inside the child, refused before clone), no
// cgroup, mount, temp dir, process or fd of Zygo's remains.
#include <dirent.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "testing/harness.h"

namespace zygo::testing {
namespace {

constexpr char kMarker[] = "zygo-leak-marker";

std::set<std::string> TmpEntries() {
  std::set<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator("/tmp")) {
    names.insert(entry.path().filename());
  }
  return names;
}

int OpenFdCount() {
  int count = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    ++count;
  }
  return count;
}

struct Ending {
  const char* name;
  std::vector<std::string> flags;
  std::vector<std::string> argv;
  int expected_exit;
};

TEST(Leftovers, FiveHundredRunsOfEveryKindLeaveNothing) {
  ASSERT_TRUE(LeftoverCgroups().empty()) << "cgroups left by an earlier test";
  std::set<std::string> tmp_before = TmpEntries();
  int fds_before = OpenFdCount();
  const std::vector<Ending> endings = {
      {"ok", {}, {"/bin/true"}, 0},
      {"nonzero", {}, {"/bin/sh", "-c", "exit 3"}, 3},
      {"killed", {}, {"/bin/sh", "-c", "kill -9 $$"}, 137},
      {"setup failure in the child", {"-w", "/no/such/dir"}, {"/bin/true"}, 125},
      {"timeout", {"--timeout", "50ms"}, {"/bin/sleep", "10"}, 137},
      {"not found", {}, {"/no/such/command"}, 127},
      {"refused before clone", {"-v", "/no/such/source:/data"}, {"/bin/true"}, 125},
  };
  const Ending oom = {"oom",
                      {"-m", "16m", "-v", ProbePath() + ":/probe:ro"},
                      {"/probe", "memory-bomb", "256"},
                      137};
  RunOptions options;
  options.want_outcome = false;
  for (int i = 0; i < 500; ++i) {
    const Ending& ending = i % 50 == 49 ? oom : endings[i % endings.size()];
    std::vector<std::string> flags = {"--hostname", kMarker};
    flags.insert(flags.end(), ending.flags.begin(), ending.flags.end());
    RunResult result = RunZygo(flags, "host", ending.argv, options);
    ASSERT_EQ(result.exit_code, ending.expected_exit)
        << "run " << i << " (" << ending.name << "): " << result.err;
  }
  EXPECT_TRUE(LeftoverCgroups().empty()) << absl::StrJoin(LeftoverCgroups(), " ");
  EXPECT_TRUE(LeftoverMounts().empty()) << absl::StrJoin(LeftoverMounts(), " ");
  // The marker is in zygo's command line and in every sandboxed HOSTNAME.
  EXPECT_TRUE(ProcessesMatching(kMarker).empty());
  EXPECT_EQ(OpenFdCount(), fds_before);
  std::set<std::string> tmp_after = TmpEntries();
  for (const std::string& name : tmp_after) {
    if (!tmp_before.count(name)) {
      EXPECT_FALSE(absl::StrContains(name, "zygo")) << "/tmp/" << name << " appeared";
    }
  }
}

}  // namespace
}  // namespace zygo::testing
