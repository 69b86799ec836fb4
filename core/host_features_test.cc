// The host's features: asked once, leaving nothing behind, and each answer borne out by
// attempting the thing itself; the cgroup facts on fake trees of each layout.
#include "core/host_features.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/sys/landlock.h"
#include "core/base/sys/process.h"
#include "core/internal/cgroup_test_files.h"
#include "gtest/gtest.h"

namespace zygo::core {
namespace {

namespace fs = std::filesystem;
using testing::WriteAll;

// /proc/self/fd and /proc/self/ns as they are now: the fds open and the namespaces this
// process is in.
std::map<std::string, std::string> ProcessState() {
  std::map<std::string, std::string> state;
  for (const char* dir : {"/proc/self/fd", "/proc/self/ns"}) {
    for (const auto& entry : fs::directory_iterator(dir)) {
      std::error_code error;
      state[entry.path().string()] = fs::read_symlink(entry.path(), error).string();
    }
  }
  return state;
}

TEST(HostFeatures, AskedOnceForEveryThread) {
  std::vector<const HostFeatures*> seen(8, nullptr);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < seen.size(); ++i) {
    threads.emplace_back([&seen, i] { seen[i] = &ProbeHostFeatures(); });
  }
  for (std::thread& thread : threads) thread.join();
  for (const HostFeatures* features : seen) EXPECT_EQ(features, &ProbeHostFeatures());
  // What is kept is what the kernel says when asked again.
  const HostFeatures again = ReadHostFeatures();
  EXPECT_EQ(ProbeHostFeatures().clone3, again.clone3);
  EXPECT_EQ(ProbeHostFeatures().clone_into_cgroup, again.clone_into_cgroup);
  EXPECT_EQ(ProbeHostFeatures().mount_setattr, again.mount_setattr);
  EXPECT_EQ(ProbeHostFeatures().landlock_abi, again.landlock_abi);
  EXPECT_EQ(ProbeHostFeatures().cgroup.hierarchy, again.cgroup.hierarchy);
  EXPECT_EQ(ProbeHostFeatures().cgroup.systemd, again.cgroup.systemd);
}

TEST(HostFeatures, AskingLeavesNothingBehind) {
  const std::map<std::string, std::string> before = ProcessState();
  ReadHostFeatures();
  EXPECT_EQ(ProcessState(), before) << "an fd or a namespace changed";
  // No child was made: there is none to reap.
  int status = 0;
  EXPECT_EQ(waitpid(-1, &status, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
}

// Control for the clone3 answer: a plain child made with it (which exits at once).
TEST(HostFeatures, Clone3IsThereWhenAChildCanBeMadeWithIt) {
  struct clone_args args = {};
  args.exit_signal = SIGCHLD;
  long pid = base::sys::RawClone3(&args);
  if (pid == 0) _exit(0);
  if (pid > 0) {
    int status = 0;
    ASSERT_EQ(waitpid(static_cast<pid_t>(pid), &status, 0), pid);
    EXPECT_EQ(ProbeHostFeatures().clone3, SyscallState::kAvailable);
  } else if (pid == -ENOSYS) {
    EXPECT_EQ(ProbeHostFeatures().clone3, SyscallState::kNoSys);
    EXPECT_FALSE(ProbeHostFeatures().clone_into_cgroup);
  } else if (pid == -EPERM) {
    EXPECT_EQ(ProbeHostFeatures().clone3, SyscallState::kRefused);
  } else {
    FAIL() << "clone3: " << strerror(static_cast<int>(-pid));
  }
}

// On a unified host: a child born, with CLONE_INTO_CGROUP, in this process's own cgroup
// (where it would have been anyway).
TEST(HostFeatures, CloneIntoCgroupBornOutByAChildBornInOurCgroup) {
  if (ProbeHostFeatures().cgroup.hierarchy != CgroupHierarchy::kUnified) {
    GTEST_SKIP() << "/sys/fs/cgroup is no cgroup2 mount: nothing to clone into";
  }
  std::string line;
  std::ifstream self("/proc/self/cgroup");
  while (std::getline(self, line) && line.rfind("0::", 0) != 0) {
  }
  ASSERT_EQ(line.rfind("0::", 0), 0u) << "no v2 line in /proc/self/cgroup";
  const std::string dir = absl::StrCat("/sys/fs/cgroup", line.substr(3));
  int cgroup = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (cgroup < 0) GTEST_SKIP() << "own cgroup " << dir << " not visible: " << strerror(errno);
  struct clone_args args = {};
  args.flags = CLONE_INTO_CGROUP;
  args.cgroup = static_cast<uint64_t>(cgroup);
  args.exit_signal = SIGCHLD;
  long pid = base::sys::RawClone3(&args);
  if (pid == 0) _exit(0);
  close(cgroup);
  if (pid > 0) waitpid(static_cast<pid_t>(pid), nullptr, 0);
  // EBUSY and EACCES: the kernel took the flag but not this cgroup (a domain with
  // controllers turned on below it, or not ours to write).
  const bool took_flag = pid > 0 || pid == -EBUSY || pid == -EACCES || pid == -EOPNOTSUPP;
  EXPECT_EQ(ProbeHostFeatures().clone_into_cgroup, took_flag) << strerror(static_cast<int>(-pid));
}

// Control for the Landlock answer: a ruleset made for that ABI (and closed, unapplied).
TEST(HostFeatures, LandlockAbiIsOneARulesetCanBeMadeFor) {
  const int abi = ProbeHostFeatures().landlock_abi;
  if (abi == 0) {
    base::sys::LandlockRulesetAttr attr = {base::sys::LandlockHandledFs(1), 0, 0};
    EXPECT_LT(base::sys::RawLandlockCreateRuleset(&attr, sizeof(uint64_t)), 0);
    return;
  }
  base::sys::LandlockRulesetAttr attr = {base::sys::LandlockHandledFs(abi), 0, 0};
  int ruleset = base::sys::RawLandlockCreateRuleset(&attr, sizeof(uint64_t));
  ASSERT_GE(ruleset, 0) << strerror(-ruleset);
  close(ruleset);
}

class CgroupFactsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = testing::FreshScratchDir("host_features_test");
    fs::create_directories(root_);
    options_.mount_root = root_.string();
    options_.systemd_marker = "";
  }
  void TearDown() override { fs::remove_all(root_); }

  // A v1 hierarchy's root, as IsV1HierarchyRoot knows one: cgroup.procs, no
  // cgroup.controllers.
  void MakeV1(const std::string& name) {
    fs::create_directories(root_ / name);
    WriteAll(root_ / name / "cgroup.procs", "1\n");
  }

  fs::path root_;
  CgroupProbeOptions options_;
};

TEST_F(CgroupFactsTest, EachLayoutIsNamed) {
  EXPECT_EQ(ReadCgroupFacts(options_).hierarchy, CgroupHierarchy::kNone);
  MakeV1("memory");
  MakeV1("pids");
  EXPECT_EQ(ReadCgroupFacts(options_).hierarchy, CgroupHierarchy::kV1);
  fs::create_directories(root_ / "unified");
  WriteAll(root_ / "unified" / "cgroup.controllers", "");
  EXPECT_EQ(ReadCgroupFacts(options_).hierarchy, CgroupHierarchy::kHybrid);
  WriteAll(root_ / "cgroup.controllers", "cpu memory pids\n");
  EXPECT_EQ(ReadCgroupFacts(options_).hierarchy, CgroupHierarchy::kUnified);
}

TEST_F(CgroupFactsTest, SystemdRunsWhereItsMarkerIsADirectory) {
  EXPECT_FALSE(ReadCgroupFacts(options_).systemd) << "\"\" never asks";
  options_.systemd_marker = (root_ / "run-systemd-system").string();
  EXPECT_FALSE(ReadCgroupFacts(options_).systemd);
  WriteAll(options_.systemd_marker, "");
  EXPECT_FALSE(ReadCgroupFacts(options_).systemd) << "a file is no marker";
  fs::remove(options_.systemd_marker);
  fs::create_directories(options_.systemd_marker);
  EXPECT_TRUE(ReadCgroupFacts(options_).systemd);
}

}  // namespace
}  // namespace zygo::core
