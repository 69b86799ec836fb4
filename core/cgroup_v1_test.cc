// The cgroup v1 driver: unit tests against a fake tree in $TEST_TMPDIR, then real
// cgroups on this host (root, v1 hierarchies) where children try to exceed the limits.
#include "core/internal/cgroup_v1.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/cgroup.h"
#include "core/internal/cgroup_test_files.h"
#include "gtest/gtest.h"

namespace zygo::core {
namespace {

namespace fs = std::filesystem;

using testing::ReadAll;
using testing::WriteAll;

// ---------------------------------------------------------------------------------
// Fake tree: the layout of a host with cpu and cpuacct co-mounted, as many distros do.

class FakeCgroupV1Tree : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = testing::FreshScratchDir("cgroup_v1_test");
    root_ = base_ / "root";
    MakeHierarchy("memory");
    fs::create_directories(root_ / "memory" / "machine" / "abc");
    MakeHierarchy("pids");
    MakeHierarchy("cpu,cpuacct");
    fs::create_directory_symlink("cpu,cpuacct", root_ / "cpu");
    fs::create_directory_symlink("cpu,cpuacct", root_ / "cpuacct");
    WriteAll(base_ / "self_cgroup",
             "12:pids:/\n4:memory:/machine/abc\n3:cpu,cpuacct:/\n1:name=systemd:/\n0::/\n");
    options_.mount_root = root_.string();
    options_.self_cgroup_file = (base_ / "self_cgroup").string();
  }

  void TearDown() override { fs::remove_all(base_); }

  void MakeHierarchy(const std::string& name) {
    fs::create_directories(root_ / name);
    WriteAll(root_ / name / "cgroup.procs", "");
  }

  // cpu and cpuacct as two hierarchies instead of one co-mounted, with `self_cgroup` as
  // /proc/self/cgroup.
  void SeparateCpuFromCpuacct(const std::string& self_cgroup) {
    fs::remove(root_ / "cpu");
    fs::remove(root_ / "cpuacct");
    fs::remove_all(root_ / "cpu,cpuacct");
    MakeHierarchy("cpu");
    MakeHierarchy("cpuacct");
    WriteAll(base_ / "self_cgroup", self_cgroup);
  }

  std::unique_ptr<CgroupDriver> Probe() {
    absl::StatusOr<std::unique_ptr<CgroupDriver>> driver = ProbeCgroupDriver(options_);
    EXPECT_TRUE(driver.ok()) << driver.status();
    return driver.ok() ? *std::move(driver) : nullptr;
  }

  fs::path base_;
  fs::path root_;
  CgroupProbeOptions options_;
};

TEST_F(FakeCgroupV1Tree, ProbePicksV1AndFindsTheOwnCgroups) {
  std::unique_ptr<CgroupDriver> driver = Probe();
  ASSERT_NE(driver, nullptr);
  EXPECT_EQ(driver->version(), CgroupVersion::kV1);
  EXPECT_STREQ(driver->name(), "v1");
  const internal::V1Layout& layout = dynamic_cast<internal::CgroupV1Driver&>(*driver).layout();
  EXPECT_EQ(layout.memory.parent_dir, (root_ / "memory" / "machine" / "abc").string());
  EXPECT_EQ(layout.pids.parent_dir, (root_ / "pids").string());
  EXPECT_EQ(layout.cpu.parent_dir, (root_ / "cpu").string());
  ASSERT_TRUE(layout.cpuacct.has_value());
  EXPECT_EQ(layout.cpuacct->id, layout.cpu.id);  // One hierarchy, one directory.
}

TEST_F(FakeCgroupV1Tree, ProbeNamesEachMissingHierarchy) {
  fs::remove_all(root_ / "pids");
  fs::remove(root_ / "cpu");
  fs::remove(root_ / "cpuacct");
  fs::rename(root_ / "cpu,cpuacct", root_ / "elsewhere");
  absl::StatusOr<std::unique_ptr<CgroupDriver>> driver = ProbeCgroupDriver(options_);
  ASSERT_FALSE(driver.ok());
  EXPECT_EQ(driver.status().code(), absl::StatusCode::kFailedPrecondition);
  const std::string message(driver.status().message());
  EXPECT_TRUE(absl::StrContains(message, "pids: ")) << message;
  EXPECT_TRUE(absl::StrContains(message, "cpu: ")) << message;
  EXPECT_FALSE(absl::StrContains(message, "memory: ")) << message;
}

TEST_F(FakeCgroupV1Tree, ACgroup2DirectoryIsNotAV1Hierarchy) {
  WriteAll(root_ / "pids" / "cgroup.controllers", "pids\n");
  absl::StatusOr<std::unique_ptr<CgroupDriver>> driver = ProbeCgroupDriver(options_);
  ASSERT_FALSE(driver.ok());
  EXPECT_TRUE(absl::StrContains(driver.status().message(), "is not a v1 hierarchy"))
      << driver.status();
}

// A pid no process has: a child that has been reaped.
pid_t DeadPid() {
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  waitpid(pid, nullptr, 0);
  return pid;
}

TEST_F(FakeCgroupV1Tree, CreateSweepsADeadOwnersCgroupWithItsNestedOnes) {
  const pid_t dead = DeadPid();
  const fs::path stale = root_ / "pids" / absl::StrCat("zygo-", dead, "-0");
  fs::create_directories(stale / absl::StrCat("request-", dead, "-7"));
  const fs::path live = root_ / "pids" / absl::StrCat("zygo-", ::getppid(), "-0");
  fs::create_directories(live / "request-1");
  std::unique_ptr<CgroupDriver> driver = Probe();
  ASSERT_NE(driver, nullptr);
  ASSERT_TRUE(fs::exists(stale)) << "the probe alone sweeps nothing";
  absl::StatusOr<std::unique_ptr<Cgroup>> cgroup = driver->Create({});
  ASSERT_TRUE(cgroup.ok()) << cgroup.status();
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(live / "request-1")) << "a live owner's cgroups are not ours to remove";
}

TEST_F(FakeCgroupV1Tree, CreateChildNestsInEveryHierarchyWithItsOwnLimits) {
  std::unique_ptr<CgroupDriver> driver = Probe();
  ASSERT_NE(driver, nullptr);
  absl::StatusOr<std::unique_ptr<Cgroup>> parent = driver->Create({.memory_bytes = 64 << 20});
  ASSERT_TRUE(parent.ok()) << parent.status();
  absl::StatusOr<std::unique_ptr<Cgroup>> child =
      (*parent)->CreateChild({.memory_bytes = 16 << 20, .pids_max = 3}, "request-");
  ASSERT_TRUE(child.ok()) << child.status();
  const std::vector<std::string> parents = (*parent)->paths();
  const std::vector<std::string> children = (*child)->paths();
  ASSERT_EQ(children.size(), parents.size());
  for (size_t i = 0; i < children.size(); ++i) {
    EXPECT_EQ(fs::path(children[i]).parent_path(), fs::path(parents[i]));
  }
  EXPECT_EQ(ReadAll(fs::path(children[0]) / "memory.limit_in_bytes"), "16777216");
  EXPECT_EQ(ReadAll(fs::path(children[1]) / "pids.max"), "3");
}

// Where cpuacct is a hierarchy apart from cpu (as on this project's CI VMs), a sandbox gets a
// directory there, a nested cgroup does not: one move fewer per spare, and nothing reads a
// nested cgroup's CPU time.
TEST_F(FakeCgroupV1Tree, CreateChildSkipsACpuacctHierarchyApartFromCpu) {
  SeparateCpuFromCpuacct("12:pids:/\n4:memory:/machine/abc\n3:cpu:/\n2:cpuacct:/\n0::/\n");
  std::unique_ptr<CgroupDriver> driver = Probe();
  ASSERT_NE(driver, nullptr);
  absl::StatusOr<std::unique_ptr<Cgroup>> parent = driver->Create({});
  ASSERT_TRUE(parent.ok()) << parent.status();
  ASSERT_EQ((*parent)->paths().size(), 4u);  // memory, pids, cpu, cpuacct
  absl::StatusOr<std::unique_ptr<Cgroup>> child = (*parent)->CreateChild({}, "request-");
  ASSERT_TRUE(child.ok()) << child.status();
  const std::vector<std::string> children = (*child)->paths();
  ASSERT_EQ(children.size(), 3u);
  for (const std::string& dir : children) {
    EXPECT_FALSE(absl::StrContains(dir, "/cpuacct/")) << dir;
  }
  absl::StatusOr<std::vector<int>> join = (*child)->SelfJoinFiles();
  ASSERT_TRUE(join.ok()) << join.status();
  EXPECT_EQ(join->size(), 3u);
}

TEST_F(FakeCgroupV1Tree, CreateWritesLimitsIntoEachHierarchy) {
  std::unique_ptr<CgroupDriver> driver = Probe();
  ASSERT_NE(driver, nullptr);
  absl::StatusOr<std::unique_ptr<Cgroup>> cgroup =
      driver->Create({.memory_bytes = 16 << 20, .pids_max = 5, .cpus = 0.5});
  ASSERT_TRUE(cgroup.ok()) << cgroup.status();
  const std::vector<std::string> paths = (*cgroup)->paths();
  ASSERT_EQ(paths.size(), 3u);  // cpu and cpuacct share one.
  const std::string name = fs::path(paths[0]).filename();
  EXPECT_TRUE(absl::StartsWith(name, absl::StrCat("zygo-", ::getpid(), "-"))) << name;
  const fs::path memory = root_ / "memory" / "machine" / "abc" / name;
  const fs::path pids = root_ / "pids" / name;
  const fs::path cpu = root_ / "cpu" / name;
  EXPECT_EQ(paths, (std::vector<std::string>{memory, pids, cpu}));
  EXPECT_EQ(ReadAll(memory / "memory.limit_in_bytes"), "16777216");
  EXPECT_FALSE(fs::exists(memory / "memory.memsw.limit_in_bytes"));  // Optional.
  EXPECT_EQ(ReadAll(pids / "pids.max"), "5");
  EXPECT_EQ(ReadAll(cpu / "cpu.cfs_period_us"), "100000");
  EXPECT_EQ(ReadAll(cpu / "cpu.cfs_quota_us"), "50000");
  EXPECT_EQ((*cgroup)->clone_into_fd(), -1);

  ASSERT_TRUE((*cgroup)->AttachFromParent(4242).ok());
  for (const std::string& dir : paths) {
    EXPECT_EQ(ReadAll(fs::path(dir) / "cgroup.procs"), "4242") << dir;
  }
}

TEST_F(FakeCgroupV1Tree, SeparateCpuacctHierarchyGetsItsOwnDirectory) {
  SeparateCpuFromCpuacct("8:pids:/\n4:memory:/\n2:cpuacct:/\n1:cpu:/\n0::/\n");
  std::unique_ptr<CgroupDriver> driver = Probe();
  ASSERT_NE(driver, nullptr);
  absl::StatusOr<std::unique_ptr<Cgroup>> cgroup = driver->Create({.cpus = 2});
  ASSERT_TRUE(cgroup.ok()) << cgroup.status();
  const std::vector<std::string> paths = (*cgroup)->paths();
  ASSERT_EQ(paths.size(), 4u);
  const fs::path cpuacct = paths[3];
  EXPECT_EQ(cpuacct.parent_path(), root_ / "cpuacct");
  EXPECT_EQ(ReadAll(fs::path(paths[2]) / "cpu.cfs_quota_us"), "200000");

  WriteAll(fs::path(paths[0]) / "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\n");
  WriteAll(fs::path(paths[1]) / "pids.events", "max 0\n");
  WriteAll(cpuacct / "cpuacct.usage_user", "2500000\n");
  WriteAll(cpuacct / "cpuacct.usage_sys", "1000999\n");
  absl::StatusOr<CgroupUsage> usage = (*cgroup)->ReadUsage();
  ASSERT_TRUE(usage.ok()) << usage.status();
  EXPECT_EQ(usage->cpu_user_us, 2500);
  EXPECT_EQ(usage->cpu_system_us, 1000);
  EXPECT_EQ(usage->oom_kills, 0);  // No oom_kill line before Linux 4.13.
  EXPECT_EQ(usage->memory_peak_bytes, 0);
}

TEST_F(FakeCgroupV1Tree, ReadUsageParsesTheControllersCounters) {
  std::unique_ptr<CgroupDriver> driver = Probe();
  ASSERT_NE(driver, nullptr);
  absl::StatusOr<std::unique_ptr<Cgroup>> cgroup = driver->Create({});
  ASSERT_TRUE(cgroup.ok()) << cgroup.status();
  const std::vector<std::string> paths = (*cgroup)->paths();
  WriteAll(fs::path(paths[0]) / "memory.oom_control",
           "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n");
  WriteAll(fs::path(paths[0]) / "memory.max_usage_in_bytes", "16777216\n");
  WriteAll(fs::path(paths[1]) / "pids.events", "max 2\n");
  WriteAll(fs::path(paths[2]) / "cpuacct.usage_user", "7000\n");
  WriteAll(fs::path(paths[2]) / "cpuacct.usage_sys", "3000\n");
  absl::StatusOr<CgroupUsage> usage = (*cgroup)->ReadUsage();
  ASSERT_TRUE(usage.ok()) << usage.status();
  EXPECT_EQ(usage->oom_kills, 3);
  EXPECT_EQ(usage->pids_max_hits, 2);
  EXPECT_EQ(usage->memory_peak_bytes, 16 << 20);
  EXPECT_EQ(usage->cpu_user_us, 7);
  EXPECT_EQ(usage->cpu_system_us, 3);

  WriteAll(fs::path(paths[1]) / "pids.events", "max lots\n");
  usage = (*cgroup)->ReadUsage();
  EXPECT_EQ(usage.status().code(), absl::StatusCode::kInternal);
  EXPECT_TRUE(absl::StrContains(usage.status().message(), "pids.events")) << usage.status();
}

TEST_F(FakeCgroupV1Tree, DestroyRemovesEmptyDirectoriesAndIsIdempotent) {
  std::unique_ptr<CgroupDriver> driver = Probe();
  ASSERT_NE(driver, nullptr);
  absl::StatusOr<std::unique_ptr<Cgroup>> cgroup = driver->Create({});
  ASSERT_TRUE(cgroup.ok()) << cgroup.status();
  const std::vector<std::string> paths = (*cgroup)->paths();
  EXPECT_TRUE((*cgroup)->Destroy().ok());
  for (const std::string& dir : paths) EXPECT_FALSE(fs::exists(dir)) << dir;
  EXPECT_TRUE((*cgroup)->Destroy().ok());
  EXPECT_EQ((*cgroup)->paths(), paths);
}

TEST_F(FakeCgroupV1Tree, DestroyNeverDeletesFilesOfAPlainDirectory) {
  std::unique_ptr<CgroupDriver> driver = Probe();
  ASSERT_NE(driver, nullptr);
  absl::StatusOr<std::unique_ptr<Cgroup>> cgroup = driver->Create({.pids_max = 3});
  ASSERT_TRUE(cgroup.ok()) << cgroup.status();
  absl::Status destroyed = (*cgroup)->Destroy();
  EXPECT_EQ(destroyed.code(), absl::StatusCode::kFailedPrecondition) << destroyed;
  EXPECT_TRUE(fs::exists(fs::path((*cgroup)->paths()[1]) / "pids.max"));
  // The directories without files did go.
  EXPECT_FALSE(fs::exists((*cgroup)->paths()[0]));
}

TEST(CgroupV1Driver, MkdirDenialIsPermissionDeniedNamingThePath) {
  // sysfs refuses mkdir (EPERM even for root), a real denial that changes nothing.
  if (!fs::is_directory("/sys/kernel")) GTEST_SKIP() << "no /sys/kernel";
  internal::V1Hierarchy denied{1, "/sys/kernel"};
  internal::CgroupV1Driver driver({denied, denied, denied, std::nullopt}, "zygo-");
  absl::StatusOr<std::unique_ptr<Cgroup>> cgroup = driver.Create({.pids_max = 1});
  ASSERT_EQ(cgroup.status().code(), absl::StatusCode::kPermissionDenied) << cgroup.status();
  EXPECT_TRUE(absl::StrContains(cgroup.status().message(), "mkdir(/sys/kernel/zygo-"))
      << cgroup.status();
  EXPECT_TRUE(absl::StrContains(cgroup.status().message(), "no cgroup can be created there"));
}

TEST(ParseV1SelfCgroup, ReadsControllerLinesAndSkipsTheRest) {
  absl::StatusOr<std::vector<internal::V1Membership>> parsed = internal::ParseV1SelfCgroup(
      "9:name=systemd:/\n4:memory:/process_api/e90a\n3:cpu,cpuacct:/a:b\n0::/\n");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->size(), 2u);
  EXPECT_EQ((*parsed)[0].hierarchy_id, 4);
  EXPECT_EQ((*parsed)[0].controllers, std::vector<std::string>{"memory"});
  EXPECT_EQ((*parsed)[0].path, "/process_api/e90a");
  EXPECT_EQ((*parsed)[1].controllers, (std::vector<std::string>{"cpu", "cpuacct"}));
  EXPECT_EQ((*parsed)[1].path, "/a:b");  // Paths may contain ':'.
  EXPECT_EQ(internal::ParseV1SelfCgroup("memory:/\n").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(internal::ParseV1SelfCgroup("x:memory:/\n").status().code(),
            absl::StatusCode::kInvalidArgument);
}

// ---------------------------------------------------------------------------------
// Real cgroups on this host. Each child waits on a pipe until the parent has attached
// it, then runs one named probe that tries to exceed a limit.

enum class ChildProbe {
  kTouchMemory,       // arg: bytes to map and touch.
  kForkUntilFailure,  // arg: most children to fork; they pause until killed.
  kBurnCpu,           // arg: milliseconds of CPU time to use.
};

struct ProbeReport {
  int32_t forks_ok = 0;
  int32_t fork_errno = 0;
};

struct ChildResult {
  bool attached = false;
  int wait_status = 0;
  ProbeReport report;
  std::chrono::milliseconds wall{0};
};

int TouchMemory(int64_t bytes) {
  void* mapped = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) return 2;
  for (int64_t offset = 0; offset < bytes; offset += 4096) {
    static_cast<volatile char*>(mapped)[offset] = 1;
  }
  return 0;
}

// Reports how many forks succeeded before the first failure, and its errno.
int ForkUntilFailure(int64_t most, int report_fd) {
  pid_t children[64];
  ProbeReport report;
  while (report.forks_ok < most && report.forks_ok < 64) {
    pid_t pid = fork();
    if (pid == 0) {
      pause();
      _exit(0);
    }
    if (pid < 0) {
      report.fork_errno = errno;
      break;
    }
    children[report.forks_ok++] = pid;
  }
  for (int i = 0; i < report.forks_ok; ++i) kill(children[i], SIGKILL);
  for (int i = 0; i < report.forks_ok; ++i) waitpid(children[i], nullptr, 0);
  return write(report_fd, &report, sizeof(report)) == sizeof(report) ? 0 : 3;
}

int BurnCpu(int64_t ms) {
  for (;;) {
    timespec used;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &used);
    if (used.tv_sec * 1000 + used.tv_nsec / 1000000 >= ms) return 0;
  }
}

int RunChildProbe(ChildProbe probe, int64_t arg, int report_fd) {
  switch (probe) {
    case ChildProbe::kTouchMemory:
      return TouchMemory(arg);
    case ChildProbe::kForkUntilFailure:
      return ForkUntilFailure(arg, report_fd);
    case ChildProbe::kBurnCpu:
      return BurnCpu(arg);
  }
  return 4;
}

// Forks a child, attaches it to `cgroup`, runs `while_held(pid)` while the child still
// waits, then lets it run `probe` and reaps it.
ChildResult RunInCgroup(Cgroup& cgroup, ChildProbe probe, int64_t arg,
                        const std::function<void(pid_t)>& while_held = nullptr) {
  ChildResult result;
  int go[2], report[2];
  if (pipe2(go, O_CLOEXEC) != 0 || pipe2(report, O_CLOEXEC) != 0) {
    ADD_FAILURE() << "pipe2: " << strerror(errno);
    return result;
  }
  const pid_t pid = fork();
  if (pid == 0) {
    close(go[1]);
    close(report[0]);
    char byte;
    ssize_t n;
    do {
      n = read(go[0], &byte, 1);
    } while (n < 0 && errno == EINTR);
    if (n != 1) _exit(99);  // The parent could not attach us.
    _exit(RunChildProbe(probe, arg, report[1]));
  }
  close(go[0]);
  close(report[1]);
  absl::Status attached = cgroup.AttachFromParent(pid);
  EXPECT_TRUE(attached.ok()) << attached;
  result.attached = attached.ok();
  if (result.attached && while_held) while_held(pid);
  const auto start = std::chrono::steady_clock::now();
  if (result.attached) {
    EXPECT_EQ(write(go[1], "x", 1), 1);
  }
  close(go[1]);
  EXPECT_EQ(waitpid(pid, &result.wait_status, 0), pid);
  result.wall = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - start);
  if (read(report[0], &result.report, sizeof(result.report)) != sizeof(result.report)) {
    result.report = ProbeReport{};
  }
  close(report[0]);
  return result;
}

bool ExitedZero(int status) { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }

class HostCgroupV1 : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to create cgroups on this host";
    if (!fs::exists("/sys/fs/cgroup/memory/cgroup.procs") ||
        fs::exists("/sys/fs/cgroup/memory/cgroup.controllers")) {
      GTEST_SKIP() << "no cgroup v1 memory hierarchy at /sys/fs/cgroup/memory";
    }
    // From here a v1 host is expected: a probe failure is a failure, not a skip.
    absl::StatusOr<std::unique_ptr<CgroupDriver>> driver = ProbeCgroupDriver();
    ASSERT_TRUE(driver.ok()) << driver.status();
    ASSERT_EQ((*driver)->version(), CgroupVersion::kV1);
    driver_ = *std::move(driver);
  }

  std::unique_ptr<Cgroup> Create(const CgroupLimits& limits) {
    absl::StatusOr<std::unique_ptr<Cgroup>> cgroup = driver_->Create(limits);
    EXPECT_TRUE(cgroup.ok()) << cgroup.status();
    return cgroup.ok() ? *std::move(cgroup) : nullptr;
  }

  std::unique_ptr<CgroupDriver> driver_;
};

std::string DirEndingIn(const std::vector<std::string>& paths, const std::string& hierarchy) {
  for (const std::string& path : paths) {
    if (absl::StartsWith(path, absl::StrCat("/sys/fs/cgroup/", hierarchy, "/"))) return path;
  }
  return "";
}

TEST_F(HostCgroupV1, LimitsReachTheKernelsFiles) {
  std::unique_ptr<Cgroup> cgroup = Create({.memory_bytes = 16 << 20, .pids_max = 5, .cpus = 0.5});
  ASSERT_NE(cgroup, nullptr);
  const std::vector<std::string> paths = cgroup->paths();
  const fs::path memory = DirEndingIn(paths, "memory");
  const fs::path pids = DirEndingIn(paths, "pids");
  const fs::path cpu = DirEndingIn(paths, "cpu");
  ASSERT_FALSE(memory.empty() || pids.empty() || cpu.empty()) << absl::StrJoin(paths, " ");
  for (const std::string& path : paths) {
    EXPECT_TRUE(
        absl::StartsWith(fs::path(path).filename().string(), absl::StrCat("zygo-", getpid(), "-")))
        << path;
  }
  EXPECT_EQ(ReadAll(memory / "memory.limit_in_bytes"), "16777216\n");
  if (fs::exists(memory / "memory.memsw.limit_in_bytes")) {
    EXPECT_EQ(ReadAll(memory / "memory.memsw.limit_in_bytes"), "16777216\n");
  }
  // The kernel OOM killer stays on.
  EXPECT_TRUE(absl::StrContains(ReadAll(memory / "memory.oom_control"), "oom_kill_disable 0"));
  EXPECT_EQ(ReadAll(pids / "pids.max"), "5\n");
  EXPECT_EQ(ReadAll(cpu / "cpu.cfs_period_us"), "100000\n");
  EXPECT_EQ(ReadAll(cpu / "cpu.cfs_quota_us"), "50000\n");
  EXPECT_TRUE(cgroup->Destroy().ok());
}

TEST_F(HostCgroupV1, AttachedChildIsInEveryHierarchy) {
  std::unique_ptr<Cgroup> cgroup = Create({.pids_max = 16});
  ASSERT_NE(cgroup, nullptr);
  const std::vector<std::string> paths = cgroup->paths();
  ChildResult child = RunInCgroup(*cgroup, ChildProbe::kTouchMemory, 4096, [&](pid_t pid) {
    for (const std::string& dir : paths) {
      const std::vector<std::string> procs =
          absl::StrSplit(ReadAll(fs::path(dir) / "cgroup.procs"), '\n', absl::SkipEmpty());
      EXPECT_EQ(procs, std::vector<std::string>{absl::StrCat(pid)}) << dir;
    }
  });
  EXPECT_TRUE(ExitedZero(child.wait_status)) << child.wait_status;
  EXPECT_TRUE(cgroup->Destroy().ok());
}

TEST_F(HostCgroupV1, MemoryLimitOomKillsAndIsCounted) {
  std::unique_ptr<Cgroup> cgroup = Create({.memory_bytes = 16 << 20});
  ASSERT_NE(cgroup, nullptr);
  // Allow control: the same probe under the same limit, with 1 MiB.
  ChildResult small = RunInCgroup(*cgroup, ChildProbe::kTouchMemory, 1 << 20);
  EXPECT_TRUE(ExitedZero(small.wait_status)) << small.wait_status;
  absl::StatusOr<CgroupUsage> usage = cgroup->ReadUsage();
  ASSERT_TRUE(usage.ok()) << usage.status();
  EXPECT_EQ(usage->oom_kills, 0);
  EXPECT_EQ(cgroup->ReadLimitHits().value_or(CgroupUsage{.oom_kills = -1}).oom_kills, 0);

  ChildResult big = RunInCgroup(*cgroup, ChildProbe::kTouchMemory, 64 << 20);
  ASSERT_TRUE(WIFSIGNALED(big.wait_status)) << big.wait_status;
  EXPECT_EQ(WTERMSIG(big.wait_status), SIGKILL);
  usage = cgroup->ReadUsage();
  ASSERT_TRUE(usage.ok()) << usage.status();
  EXPECT_GE(usage->oom_kills, 1);
  // The same count through the files held open since Create (read 0 above, before the kill).
  absl::StatusOr<CgroupUsage> hits = cgroup->ReadLimitHits();
  ASSERT_TRUE(hits.ok()) << hits.status();
  EXPECT_EQ(hits->oom_kills, usage->oom_kills);
  EXPECT_GT(usage->memory_peak_bytes, 1 << 20);
  EXPECT_LE(usage->memory_peak_bytes, 16 << 20);
  EXPECT_TRUE(cgroup->Destroy().ok());
}

// The peak is read through a file held open since the cgroup was made: each read must
// show the kernel's value now, and a reset must reach the kernel.
TEST_F(HostCgroupV1, MemoryPeakIsReadAfreshAndResets) {
  std::unique_ptr<Cgroup> cgroup = Create({.memory_bytes = 256 << 20});
  ASSERT_NE(cgroup, nullptr);
  ChildResult small = RunInCgroup(*cgroup, ChildProbe::kTouchMemory, 4 << 20);
  ASSERT_TRUE(ExitedZero(small.wait_status)) << small.wait_status;
  absl::StatusOr<int64_t> after_small = cgroup->ReadMemoryPeak();
  ASSERT_TRUE(after_small.ok()) << after_small.status();
  EXPECT_GE(*after_small, 4 << 20);
  EXPECT_LT(*after_small, 24 << 20);

  ChildResult big = RunInCgroup(*cgroup, ChildProbe::kTouchMemory, 32 << 20);
  ASSERT_TRUE(ExitedZero(big.wait_status)) << big.wait_status;
  absl::StatusOr<int64_t> after_big = cgroup->ReadMemoryPeak();
  ASSERT_TRUE(after_big.ok()) << after_big.status();
  EXPECT_GE(*after_big, 32 << 20);

  // Nothing is left inside, so the reset brings the peak down to what the cgroup still
  // charges (page cache at most), well below the last child's 32 MiB.
  ASSERT_TRUE(cgroup->ResetPeak().ok());
  absl::StatusOr<int64_t> after_reset = cgroup->ReadMemoryPeak();
  ASSERT_TRUE(after_reset.ok()) << after_reset.status();
  EXPECT_LT(*after_reset, 16 << 20);
  absl::StatusOr<CgroupUsage> usage = cgroup->ReadUsage();
  ASSERT_TRUE(usage.ok()) << usage.status();
  EXPECT_EQ(usage->memory_peak_bytes, *after_reset);
  EXPECT_TRUE(cgroup->Destroy().ok());
}

TEST_F(HostCgroupV1, PidsLimitStopsForks) {
  // Allow control: the same probe with room to spare.
  std::unique_ptr<Cgroup> roomy = Create({.pids_max = 64});
  ASSERT_NE(roomy, nullptr);
  ChildResult allowed = RunInCgroup(*roomy, ChildProbe::kForkUntilFailure, 10);
  EXPECT_TRUE(ExitedZero(allowed.wait_status)) << allowed.wait_status;
  EXPECT_EQ(allowed.report.forks_ok, 10);
  EXPECT_EQ(allowed.report.fork_errno, 0);
  absl::StatusOr<CgroupUsage> usage = roomy->ReadUsage();
  ASSERT_TRUE(usage.ok()) << usage.status();
  EXPECT_EQ(usage->pids_max_hits, 0);

  std::unique_ptr<Cgroup> tight = Create({.pids_max = 5});
  ASSERT_NE(tight, nullptr);
  ChildResult denied = RunInCgroup(*tight, ChildProbe::kForkUntilFailure, 10);
  EXPECT_TRUE(ExitedZero(denied.wait_status)) << denied.wait_status;
  EXPECT_EQ(denied.report.forks_ok, 4);  // The probe itself is the fifth task.
  EXPECT_EQ(denied.report.fork_errno, EAGAIN);
  usage = tight->ReadUsage();
  ASSERT_TRUE(usage.ok()) << usage.status();
  EXPECT_GE(usage->pids_max_hits, 1);
  absl::StatusOr<CgroupUsage> hits = tight->ReadLimitHits();
  ASSERT_TRUE(hits.ok()) << hits.status();
  EXPECT_EQ(hits->pids_max_hits, usage->pids_max_hits);
  EXPECT_EQ(roomy->ReadLimitHits().value_or(CgroupUsage{.pids_max_hits = -1}).pids_max_hits, 0);
}

TEST_F(HostCgroupV1, CpuQuotaThrottlesAndCpuTimeIsCounted) {
  constexpr int64_t kBurnMs = 150;
  std::unique_ptr<Cgroup> fast = Create({.cpus = 2});
  ASSERT_NE(fast, nullptr);
  ChildResult unthrottled = RunInCgroup(*fast, ChildProbe::kBurnCpu, kBurnMs);
  EXPECT_TRUE(ExitedZero(unthrottled.wait_status));

  std::unique_ptr<Cgroup> slow = Create({.cpus = 0.2});
  ASSERT_NE(slow, nullptr);
  ChildResult throttled = RunInCgroup(*slow, ChildProbe::kBurnCpu, kBurnMs);
  EXPECT_TRUE(ExitedZero(throttled.wait_status));
  // 150 ms of CPU at 20 ms per 100 ms period needs at least 7 periods.
  EXPECT_GE(throttled.wall.count(), 500) << "throttled run took " << throttled.wall.count();
  EXPECT_LT(unthrottled.wall.count(), throttled.wall.count());

  absl::StatusOr<CgroupUsage> usage = slow->ReadUsage();
  ASSERT_TRUE(usage.ok()) << usage.status();
  const bool has_cpuacct = fs::exists("/sys/fs/cgroup/cpuacct/cgroup.procs");
  if (has_cpuacct) {
    EXPECT_GE(usage->cpu_user_us + usage->cpu_system_us, 100'000)
        << usage->cpu_user_us << " + " << usage->cpu_system_us;
  }
}

TEST_F(HostCgroupV1, DestroyRemovesEveryDirectory) {
  std::unique_ptr<Cgroup> cgroup = Create({.memory_bytes = 32 << 20, .pids_max = 8, .cpus = 1});
  ASSERT_NE(cgroup, nullptr);
  ChildResult child = RunInCgroup(*cgroup, ChildProbe::kTouchMemory, 1 << 20);
  EXPECT_TRUE(ExitedZero(child.wait_status));
  const std::vector<std::string> paths = cgroup->paths();
  ASSERT_GE(paths.size(), 3u);
  for (const std::string& dir : paths) ASSERT_TRUE(fs::is_directory(dir)) << dir;
  absl::Status destroyed = cgroup->Destroy();
  EXPECT_TRUE(destroyed.ok()) << destroyed;
  for (const std::string& dir : paths) EXPECT_FALSE(fs::exists(dir)) << dir;
  EXPECT_TRUE(cgroup->Destroy().ok());
}

// A child that pauses until killed; killed and reaped on scope exit.
class PausedChild {
 public:
  PausedChild() : pid_(fork()) {
    if (pid_ == 0) {
      pause();
      _exit(0);
    }
  }
  ~PausedChild() { KillAndReap(); }
  pid_t pid() const { return pid_; }
  // Waits for it to end by some other hand; returns the wait status (-1 if none).
  int Reap() {
    int status = -1;
    if (pid_ > 0 && waitpid(pid_, &status, 0) != pid_) status = -1;
    pid_ = -1;
    return status;
  }
  void KillAndReap() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  pid_t pid_;
};

TEST_F(HostCgroupV1, DestroyRetriesWhileTheLastTaskLeaves) {
  std::unique_ptr<Cgroup> cgroup = Create({.pids_max = 8});
  ASSERT_NE(cgroup, nullptr);
  const std::vector<std::string> paths = cgroup->paths();
  PausedChild child;
  ASSERT_GT(child.pid(), 0);
  ASSERT_TRUE(cgroup->AttachFromParent(child.pid()).ok());

  // A task that stays: Destroy gives up (after ~1 s per directory) and says why.
  absl::Status busy = cgroup->Destroy();
  EXPECT_FALSE(busy.ok());
  EXPECT_TRUE(absl::StrContains(busy.message(), "tasks remain")) << busy;
  EXPECT_TRUE(fs::exists(paths[0]));

  // A task that leaves while Destroy is retrying.
  std::thread killer([&child] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    child.KillAndReap();
  });
  absl::Status gone = cgroup->Destroy();
  killer.join();
  EXPECT_TRUE(gone.ok()) << gone;
  for (const std::string& dir : paths) EXPECT_FALSE(fs::exists(dir)) << dir;
}

// KillAll reads the member count first (held open) and lists members only when there are
// any: every member dies, a process outside stays, and an emptied cgroup reads as empty.
TEST_F(HostCgroupV1, KillAllKillsEveryMemberAndNoOneElse) {
  std::unique_ptr<Cgroup> cgroup = Create({.pids_max = 16});
  ASSERT_NE(cgroup, nullptr);
  EXPECT_TRUE(cgroup->KillAll().ok());  // nobody inside yet
  PausedChild bystander;
  PausedChild first, second;
  ASSERT_GT(bystander.pid(), 0);
  ASSERT_TRUE(cgroup->AttachFromParent(first.pid()).ok());
  ASSERT_TRUE(cgroup->AttachFromParent(second.pid()).ok());

  ASSERT_TRUE(cgroup->KillAll().ok());
  for (PausedChild* member : {&first, &second}) {
    const int status = member->Reap();
    EXPECT_TRUE(status != -1 && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
  }
  EXPECT_EQ(waitpid(bystander.pid(), nullptr, WNOHANG), 0);  // still running
  EXPECT_TRUE(cgroup->KillAll().ok());                       // reaped: the count reads 0
  EXPECT_EQ(waitpid(bystander.pid(), nullptr, WNOHANG), 0);
  EXPECT_TRUE(cgroup->Destroy().ok());
}

TEST_F(HostCgroupV1, AChildJoinsByWritingZeroIntoTheJoinFiles) {
  std::unique_ptr<Cgroup> cgroup = Create({.pids_max = 16});
  ASSERT_NE(cgroup, nullptr);
  // Listed in every hierarchy's cgroup.procs.
  auto holds = [&](pid_t pid) {
    for (const std::string& dir : cgroup->paths()) {
      const std::vector<std::string> procs =
          absl::StrSplit(ReadAll(fs::path(dir) / "cgroup.procs"), '\n', absl::SkipEmpty());
      if (std::find(procs.begin(), procs.end(), absl::StrCat(pid)) == procs.end()) return false;
    }
    return true;
  };
  absl::StatusOr<std::vector<int>> files = cgroup->SelfJoinFiles();
  ASSERT_TRUE(files.ok()) << files.status();
  ASSERT_EQ(files->size(), cgroup->paths().size());
  int go[2], done[2];
  ASSERT_EQ(pipe2(go, O_CLOEXEC), 0);
  ASSERT_EQ(pipe2(done, O_CLOEXEC), 0);
  PausedChild bystander;  // Forked before the joiner: must stay where it is.
  const pid_t joiner = fork();
  ASSERT_GE(joiner, 0);
  if (joiner == 0) {
    char byte;
    if (read(go[0], &byte, 1) != 1) _exit(2);
    for (int file : *files) {
      if (write(file, "0", 1) != 1) _exit(3);
    }
    (void)!write(done[1], "j", 1);
    pause();
    _exit(0);
  }
  // Not yet: the files alone move nobody.
  EXPECT_FALSE(holds(joiner));
  ASSERT_EQ(write(go[1], "g", 1), 1);
  char byte = 0;
  ASSERT_EQ(read(done[0], &byte, 1), 1);
  EXPECT_TRUE(holds(joiner));
  EXPECT_FALSE(holds(bystander.pid()));
  EXPECT_FALSE(holds(getpid()));
  kill(joiner, SIGKILL);
  waitpid(joiner, nullptr, 0);
  for (int fd : {go[0], go[1], done[0], done[1]}) close(fd);
  EXPECT_TRUE(cgroup->Destroy().ok());
}

}  // namespace
}  // namespace zygo::core
