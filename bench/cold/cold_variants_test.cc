#include "bench/cold/cold_variants.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace zygo::bench {
namespace {

// True when `args` holds `a b c` consecutively.
bool HasTriple(const std::vector<std::string>& args, const std::string& a, const std::string& b,
               const std::string& c) {
  for (size_t i = 0; i + 2 < args.size(); ++i) {
    if (args[i] == a && args[i + 1] == b && args[i + 2] == c) return true;
  }
  return false;
}

bool IsSymlink(const char* path) {
  struct stat st;
  return lstat(path, &st) == 0 && S_ISLNK(st.st_mode);
}

std::string LinkTarget(const char* path) {
  char target[4096];
  ssize_t n = readlink(path, target, sizeof(target));
  return n > 0 ? std::string(target, n) : "";
}

TEST(BwrapRootArgs, MirrorsTheHostImageOfThisHost) {
  absl::StatusOr<std::vector<std::string>> args = BwrapRootArgs();
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_TRUE(HasTriple(*args, "--ro-bind", "/usr", "/usr"));
  // Merged /usr hosts have /bin as a symlink; others bind it. Either way it is there.
  if (IsSymlink("/bin")) {
    EXPECT_TRUE(HasTriple(*args, "--symlink", LinkTarget("/bin"), "/bin"));
  } else {
    EXPECT_TRUE(HasTriple(*args, "--ro-bind", "/bin", "/bin"));
  }
  if (access("/etc/passwd", F_OK) == 0 && !IsSymlink("/etc/passwd")) {
    EXPECT_TRUE(HasTriple(*args, "--ro-bind", "/etc/passwd", "/etc/passwd"));
  }
  // Nothing zygo's mount plan does not do: no writable binds, and /proc, /dev, /tmp
  // come from bwrap's own flags.
  EXPECT_EQ(std::find(args->begin(), args->end(), "--bind"), args->end());
  for (const std::string& arg : *args) {
    EXPECT_NE(arg.rfind("/dev", 0), 0u) << arg;
    EXPECT_NE(arg.rfind("/proc", 0), 0u) << arg;
    EXPECT_NE(arg, "/tmp");
  }
}

TEST(BuildColdCases, ThreeVariantsPerWorkloadInOrder) {
  absl::StatusOr<std::vector<ColdCase>> cases = BuildColdCases("/z/zygo", "/b/bwrap", true);
  ASSERT_TRUE(cases.ok()) << cases.status();
  ASSERT_EQ(cases->size(), 6u);
  EXPECT_EQ((*cases)[0].workload, "/bin/true");
  EXPECT_EQ((*cases)[0].variant, kVariantZygo);
  EXPECT_EQ((*cases)[1].variant, kVariantBwrap);
  EXPECT_EQ((*cases)[2].variant, kVariantBare);
  EXPECT_EQ((*cases)[3].workload, "/usr/bin/python3 -c pass");

  EXPECT_EQ((*cases)[0].command.argv,
            (std::vector<std::string>{"/z/zygo", "run", "host", "/bin/true"}));
  const std::vector<std::string>& python = (*cases)[4].command.argv;
  EXPECT_EQ(python.front(), "/b/bwrap");
  EXPECT_EQ(std::vector<std::string>(python.end() - 3, python.end()),
            (std::vector<std::string>{"/usr/bin/python3", "-c", "pass"}));
  EXPECT_TRUE(HasTriple(python, "--setenv", "HOME", "/tmp"));
  EXPECT_NE(std::find(python.begin(), python.end(), "--clearenv"), python.end());
  EXPECT_NE(std::find(python.begin(), python.end(), "--unshare-all"), python.end());
}

TEST(BuildColdCases, BareGetsTheSandboxEnvironmentNotTheCallers) {
  absl::StatusOr<std::vector<ColdCase>> cases = BuildColdCases("/z", "/b", false);
  ASSERT_TRUE(cases.ok()) << cases.status();
  ASSERT_EQ(cases->size(), 4u);  // no bwrap cases without the peer
  const Command& bare = (*cases)[1].command;
  EXPECT_EQ((*cases)[1].variant, kVariantBare);
  EXPECT_FALSE(bare.inherit_env);
  EXPECT_EQ(bare.workdir, "/");
  ASSERT_FALSE(bare.env.empty());
  EXPECT_EQ(bare.env[0].rfind("PATH=/", 0), 0u);
  EXPECT_NE(std::find(bare.env.begin(), bare.env.end(), "HOME=/tmp"), bare.env.end());
}

TEST(ColdWorkloads, NeverLooksPythonUpOnPath) {
  for (const Workload& workload : ColdWorkloads()) {
    EXPECT_EQ(workload.argv[0][0], '/') << workload.name;
  }
}

}  // namespace
}  // namespace zygo::bench
