// Unit tests of the cgroup v2 driver against a fake cgroup2 tree in $TEST_TMPDIR: the
// probe's choice, the limit files' formats, usage parsing and /proc/self/cgroup parsing.
#include "core/internal/cgroup_v2.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/cgroup.h"
#include "core/internal/cgroup_test_files.h"
#include "gtest/gtest.h"

namespace zygo::core {
namespace {

namespace fs = std::filesystem;

using testing::ReadAll;
using testing::WriteAll;

class FakeCgroup2Tree : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = testing::FreshScratchDir("cgroup_v2_test");
    root_ = base_ / "root";
    own_ = root_ / "work.slice";
    fs::create_directories(own_);
    WriteAll(root_ / "cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n");
    WriteAll(own_ / "cgroup.controllers", "cpu memory pids\n");
    WriteAll(own_ / "cgroup.subtree_control", "");
    WriteAll(own_ / "cgroup.procs", absl::StrCat(getpid(), "\n"));
    WriteAll(base_ / "self_cgroup", "0::/work.slice\n");
    options_.mount_root = root_.string();
    options_.self_cgroup_file = (base_ / "self_cgroup").string();
  }

  void TearDown() override {
    // Drop our handles first: their Destroy() must refuse to delete the fake files.
    cgroup_.reset();
    fs::remove_all(base_);
  }

  std::unique_ptr<CgroupDriver> Probe() {
    absl::StatusOr<std::unique_ptr<CgroupDriver>> driver = ProbeCgroupDriver(options_);
    EXPECT_TRUE(driver.ok()) << driver.status();
    return driver.ok() ? *std::move(driver) : nullptr;
  }

  fs::path base_;
  fs::path root_;
  fs::path own_;
  CgroupProbeOptions options_;
  std::unique_ptr<Cgroup> cgroup_;
};

TEST_F(FakeCgroup2Tree, ProbePicksV2BelowTheOwnCgroup) {
  std::unique_ptr<CgroupDriver> driver = Probe();
  ASSERT_NE(driver, nullptr);
  EXPECT_EQ(driver->version(), CgroupVersion::kV2);
  EXPECT_STREQ(driver->name(), "v2");
  auto* v2 = dynamic_cast<internal::CgroupV2Driver*>(driver.get());
  ASSERT_NE(v2, nullptr);
  EXPECT_EQ(v2->parent_dir(), own_.string());
}

TEST_F(FakeCgroup2Tree, ProbeNamesTheMissingControllers) {
  WriteAll(own_ / "cgroup.controllers", "memory io\n");
  absl::StatusOr<std::unique_ptr<CgroupDriver>> driver = ProbeCgroupDriver(options_);
  ASSERT_FALSE(driver.ok());
  EXPECT_EQ(driver.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(driver.status().message(), "not given pids, cpu")) << driver.status();
  EXPECT_TRUE(absl::StrContains(driver.status().message(), own_.string())) << driver.status();
}

TEST_F(FakeCgroup2Tree, ProbeExplainsWhenNeitherVersionIsUsable) {
  fs::remove(root_ / "cgroup.controllers");
  absl::StatusOr<std::unique_ptr<CgroupDriver>> driver = ProbeCgroupDriver(options_);
  ASSERT_FALSE(driver.ok());
  EXPECT_EQ(driver.status().code(), absl::StatusCode::kFailedPrecondition);
  const std::string message(driver.status().message());
  EXPECT_TRUE(absl::StrContains(message, "not a cgroup2 mount")) << message;
  // The v2-only self file lists no v1 controller at all.
  EXPECT_TRUE(absl::StrContains(message, "memory: not a v1 controller")) << message;
  EXPECT_TRUE(absl::StrContains(message, "pids: not a v1 controller")) << message;
  EXPECT_TRUE(absl::StrContains(message, "cpu: not a v1 controller")) << message;
}

TEST_F(FakeCgroup2Tree, CreateWritesLimitsInTheKernelsFormat) {
  std::unique_ptr<CgroupDriver> driver = Probe();
  ASSERT_NE(driver, nullptr);
  absl::StatusOr<std::unique_ptr<Cgroup>> cgroup =
      driver->Create({.memory_bytes = 64 << 20, .pids_max = 32, .cpus = 0.5});
  ASSERT_TRUE(cgroup.ok()) << cgroup.status();
  cgroup_ = *std::move(cgroup);

  ASSERT_EQ(cgroup_->paths().size(), 1u);
  const fs::path dir = cgroup_->paths()[0];
  EXPECT_EQ(dir.parent_path(), own_);
  EXPECT_TRUE(absl::StartsWith(dir.filename().string(), absl::StrCat("zygo-", ::getpid(), "-")))
      << dir;
  EXPECT_EQ(ReadAll(own_ / "cgroup.subtree_control"), "+memory +pids +cpu");
  EXPECT_EQ(ReadAll(dir / "memory.max"), "67108864");
  EXPECT_EQ(ReadAll(dir / "pids.max"), "32");
  EXPECT_EQ(ReadAll(dir / "cpu.max"), "50000 100000");
  // Optional: written only where the kernel provides it, never created.
  EXPECT_FALSE(fs::exists(dir / "memory.swap.max"));

  // The fd for CLONE_INTO_CGROUP is that directory.
  struct stat by_fd, by_path;
  ASSERT_GE(cgroup_->clone_into_fd(), 0);
  ASSERT_EQ(fstat(cgroup_->clone_into_fd(), &by_fd), 0);
  ASSERT_EQ(stat(dir.c_str(), &by_path), 0);
  EXPECT_EQ(by_fd.st_ino, by_path.st_ino);
  EXPECT_EQ(by_fd.st_dev, by_path.st_dev);
}

TEST_F(FakeCgroup2Tree, CreateChildEnablesControllersBelowAndNests) {
  std::unique_ptr<CgroupDriver> driver = Probe();
  ASSERT_NE(driver, nullptr);
  absl::StatusOr<std::unique_ptr<Cgroup>> parent = driver->Create({});
  ASSERT_TRUE(parent.ok()) << parent.status();
  const fs::path parent_dir = (*parent)->paths()[0];
  // A fake tree's new directory has no kernel files; give it the one the child needs.
  WriteAll(parent_dir / "cgroup.subtree_control", "");
  absl::StatusOr<std::unique_ptr<Cgroup>> child =
      (*parent)->CreateChild({.memory_bytes = 16 << 20, .pids_max = 4}, "request-");
  ASSERT_TRUE(child.ok()) << child.status();
  const fs::path child_dir = (*child)->paths()[0];
  EXPECT_EQ(child_dir.parent_path(), parent_dir);
  EXPECT_TRUE(absl::StartsWith(child_dir.filename().string(), "request-")) << child_dir;
  EXPECT_EQ(ReadAll(parent_dir / "cgroup.subtree_control"), "+memory +pids +cpu");
  EXPECT_EQ(ReadAll(child_dir / "memory.max"), "16777216");
  EXPECT_EQ(ReadAll(child_dir / "pids.max"), "4");
  EXPECT_GE((*child)->clone_into_fd(), 0);
  fs::remove_all(child_dir);
  fs::remove_all(parent_dir);
}

TEST_F(FakeCgroup2Tree, CpusBecomeAQuotaPerHundredMilliseconds) {
  std::unique_ptr<CgroupDriver> driver = Probe();
  ASSERT_NE(driver, nullptr);
  for (auto [cpus, expected] : {std::pair{0.5, "50000 100000"}, std::pair{1.5, "150000 100000"},
                                std::pair{0.01, "1000 100000"}, std::pair{4.0, "400000 100000"}}) {
    absl::StatusOr<std::unique_ptr<Cgroup>> cgroup = driver->Create({.cpus = cpus});
    ASSERT_TRUE(cgroup.ok()) << cgroup.status();
    EXPECT_EQ(ReadAll(fs::path((*cgroup)->paths()[0]) / "cpu.max"), expected) << cpus;
  }
}

TEST_F(FakeCgroup2Tree, CreateRejectsLimitsTheKernelWouldReject) {
  std::unique_ptr<CgroupDriver> driver = Probe();
  ASSERT_NE(driver, nullptr);
  for (CgroupLimits bad : {CgroupLimits{.memory_bytes = -1}, CgroupLimits{.pids_max = -3},
                           CgroupLimits{.cpus = -0.5}, CgroupLimits{.cpus = 0.001}}) {
    absl::StatusOr<std::unique_ptr<Cgroup>> cgroup = driver->Create(bad);
    EXPECT_EQ(cgroup.status().code(), absl::StatusCode::kInvalidArgument) << cgroup.status();
  }
  // Nothing was made for them.
  EXPECT_TRUE(fs::is_empty(own_ / "cgroup.subtree_control"));
}

TEST_F(FakeCgroup2Tree, EnabledControllersAreLeftAlone) {
  WriteAll(own_ / "cgroup.subtree_control", "cpu io memory pids\n");
  std::unique_ptr<CgroupDriver> driver = Probe();
  ASSERT_NE(driver, nullptr);
  absl::StatusOr<std::unique_ptr<Cgroup>> cgroup = driver->Create({.pids_max = 8});
  ASSERT_TRUE(cgroup.ok()) << cgroup.status();
  EXPECT_EQ(ReadAll(own_ / "cgroup.subtree_control"), "cpu io memory pids\n");
}

TEST_F(FakeCgroup2Tree, OnlyTheMissingControllersAreEnabled) {
  WriteAll(own_ / "cgroup.subtree_control", "memory\n");
  std::unique_ptr<CgroupDriver> driver = Probe();
  ASSERT_NE(driver, nullptr);
  ASSERT_TRUE(driver->Create({}).ok());
  EXPECT_EQ(ReadAll(own_ / "cgroup.subtree_control"), "+pids +cpu");
}

TEST_F(FakeCgroup2Tree, EachCreateGetsANewName) {
  std::unique_ptr<CgroupDriver> driver = Probe();
  ASSERT_NE(driver, nullptr);
  absl::StatusOr<std::unique_ptr<Cgroup>> first = driver->Create({});
  absl::StatusOr<std::unique_ptr<Cgroup>> second = driver->Create({});
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_NE((*first)->paths(), (*second)->paths());
}

TEST_F(FakeCgroup2Tree, ReadUsageParsesTheEventFiles) {
  std::unique_ptr<CgroupDriver> driver = Probe();
  ASSERT_NE(driver, nullptr);
  absl::StatusOr<std::unique_ptr<Cgroup>> cgroup = driver->Create({});
  ASSERT_TRUE(cgroup.ok()) << cgroup.status();
  cgroup_ = *std::move(cgroup);
  const fs::path dir = cgroup_->paths()[0];
  WriteAll(dir / "memory.events", "low 0\nhigh 0\nmax 12\noom 3\noom_kill 2\noom_group_kill 0\n");
  WriteAll(dir / "pids.events", "max 7\n");
  WriteAll(dir / "cpu.stat",
           "usage_usec 1500\nuser_usec 1000\nsystem_usec 500\nnr_periods 4\n"
           "nr_throttled 1\nthrottled_usec 30\n");
  WriteAll(dir / "memory.peak", "123456\n");

  absl::StatusOr<CgroupUsage> usage = cgroup_->ReadUsage();
  ASSERT_TRUE(usage.ok()) << usage.status();
  EXPECT_EQ(usage->oom_kills, 2);  // oom_kill, not oom or max.
  EXPECT_EQ(usage->pids_max_hits, 7);
  EXPECT_EQ(usage->memory_peak_bytes, 123456);
  EXPECT_EQ(usage->cpu_user_us, 1000);
  EXPECT_EQ(usage->cpu_system_us, 500);

  // memory.peak is new in Linux 5.19: without it the peak is unknown, not an error.
  fs::remove(dir / "memory.peak");
  usage = cgroup_->ReadUsage();
  ASSERT_TRUE(usage.ok()) << usage.status();
  EXPECT_EQ(usage->memory_peak_bytes, 0);

  // memory.events is not optional.
  fs::remove(dir / "memory.events");
  usage = cgroup_->ReadUsage();
  EXPECT_EQ(usage.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(absl::StrContains(usage.status().message(), (dir / "memory.events").string()))
      << usage.status();
}

TEST_F(FakeCgroup2Tree, AttachWritesThePidToCgroupProcs) {
  std::unique_ptr<CgroupDriver> driver = Probe();
  ASSERT_NE(driver, nullptr);
  absl::StatusOr<std::unique_ptr<Cgroup>> cgroup = driver->Create({});
  ASSERT_TRUE(cgroup.ok()) << cgroup.status();
  cgroup_ = *std::move(cgroup);
  ASSERT_TRUE(cgroup_->AttachFromParent(4242).ok());
  EXPECT_EQ(ReadAll(fs::path(cgroup_->paths()[0]) / "cgroup.procs"), "4242");
}

TEST_F(FakeCgroup2Tree, ThereIsNoSelfJoin) {
  std::unique_ptr<CgroupDriver> driver = Probe();
  ASSERT_NE(driver, nullptr);
  absl::StatusOr<std::unique_ptr<Cgroup>> cgroup = driver->Create({});
  ASSERT_TRUE(cgroup.ok()) << cgroup.status();
  cgroup_ = *std::move(cgroup);
  EXPECT_EQ(cgroup_->SelfJoinFiles().status().code(), absl::StatusCode::kUnimplemented);
}

TEST_F(FakeCgroup2Tree, DestroyRemovesTheDirectoryOnceAndIsIdempotent) {
  std::unique_ptr<CgroupDriver> driver = Probe();
  ASSERT_NE(driver, nullptr);
  // No limits: nothing is written into the directory, so even a plain directory can go.
  absl::StatusOr<std::unique_ptr<Cgroup>> cgroup = driver->Create({});
  ASSERT_TRUE(cgroup.ok()) << cgroup.status();
  const std::string dir = (*cgroup)->paths()[0];
  ASSERT_TRUE(fs::is_directory(dir));
  EXPECT_TRUE((*cgroup)->Destroy().ok());
  EXPECT_FALSE(fs::exists(dir));
  EXPECT_TRUE((*cgroup)->Destroy().ok());
  EXPECT_EQ((*cgroup)->clone_into_fd(), -1);
  EXPECT_EQ((*cgroup)->AttachFromParent(1).code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(FakeCgroup2Tree, DestroyNeverDeletesFilesOfAPlainDirectory) {
  std::unique_ptr<CgroupDriver> driver = Probe();
  ASSERT_NE(driver, nullptr);
  absl::StatusOr<std::unique_ptr<Cgroup>> cgroup = driver->Create({.pids_max = 4});
  ASSERT_TRUE(cgroup.ok()) << cgroup.status();
  const fs::path dir = (*cgroup)->paths()[0];
  absl::Status destroyed = (*cgroup)->Destroy();
  EXPECT_EQ(destroyed.code(), absl::StatusCode::kFailedPrecondition) << destroyed;
  EXPECT_TRUE(absl::StrContains(destroyed.message(), "not a cgroupfs directory")) << destroyed;
  EXPECT_TRUE(fs::exists(dir / "pids.max"));
}

TEST_F(FakeCgroup2Tree, MkdirDenialIsPermissionDeniedNamingThePath) {
  if (geteuid() == 0) {
    GTEST_SKIP() << "root ignores directory modes; cgroup_v1_test checks the same mapping "
                    "with a real EPERM from sysfs";
  }
  WriteAll(own_ / "cgroup.subtree_control", "memory pids cpu\n");
  fs::permissions(own_, fs::perms::owner_read | fs::perms::owner_exec);
  internal::CgroupV2Driver driver(internal::FixedV2Placement(own_.string()), options_);
  absl::StatusOr<std::unique_ptr<Cgroup>> cgroup = driver.Create({});
  fs::permissions(own_, fs::perms::owner_all);
  ASSERT_EQ(cgroup.status().code(), absl::StatusCode::kPermissionDenied) << cgroup.status();
  EXPECT_TRUE(absl::StrContains(cgroup.status().message(), own_.string()));
  EXPECT_TRUE(absl::StrContains(cgroup.status().message(), "no cgroup can be created there"));
}

TEST(ParseV2SelfCgroup, FindsTheV2Line) {
  EXPECT_EQ(*internal::ParseV2SelfCgroup("0::/user.slice/session-2.scope\n"),
            "/user.slice/session-2.scope");
  // A hybrid host lists the v1 hierarchies too.
  EXPECT_EQ(*internal::ParseV2SelfCgroup("9:name=systemd:/\n4:memory:/process_api/abc\n"
                                         "1:cpu:/\n0::/\n"),
            "/");
}

TEST(ParseV2SelfCgroup, RejectsMissingOrMalformedLines) {
  EXPECT_EQ(internal::ParseV2SelfCgroup("4:memory:/a\n").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(internal::ParseV2SelfCgroup("").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(internal::ParseV2SelfCgroup("0::relative\n").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(IsCgroup2Root, UsesTheFilesystemTypeOnRealMounts) {
  // A v1 hierarchy is never a cgroup2 root; a plain directory without
  // cgroup.controllers is not one either.
  if (fs::exists("/sys/fs/cgroup/memory/cgroup.procs")) {
    EXPECT_FALSE(internal::IsCgroup2Root("/sys/fs/cgroup/memory"));
  }
  EXPECT_FALSE(internal::IsCgroup2Root("/"));
  EXPECT_FALSE(internal::IsCgroup2Root("/nonexistent-zygo-path"));
  // This host's hybrid layout mounts cgroup2 at /sys/fs/cgroup/unified.
  if (fs::exists("/sys/fs/cgroup/unified/cgroup.controllers")) {
    EXPECT_TRUE(internal::IsCgroup2Root("/sys/fs/cgroup/unified"));
  }
}

}  // namespace
}  // namespace zygo::core
