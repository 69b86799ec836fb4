// Stale cgroups on this host's real cgroupfs (v1 here, v2 on a unified host), in a private
// parent cgroup of the test's own so that nobody else's cgroups are looked at: what a
// killed zygo leaves is found and removed; what anything else made, a live zygo's, one
// with processes in it and one holding a foreign cgroup are left.
#include "core/internal/cgroup_sweep.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/cgroup.h"
#include "core/internal/cgroup_v1.h"
#include "core/internal/cgroup_v2.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zygo::core {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;

// A pid no process can have: one above the kernel's pid_max.
pid_t DeadPid() {
  int pid_max = 4'194'304;  // PID_MAX_LIMIT, when the sysctl cannot be read
  std::ifstream("/proc/sys/kernel/pid_max") >> pid_max;
  return static_cast<pid_t>(pid_max + 1);
}

TEST(ZygoCgroupOwner, OnlyZygosOwnNames) {
  EXPECT_EQ(internal::ZygoCgroupOwner("zygo-812-3", "zygo-"), 812);
  EXPECT_EQ(internal::ZygoCgroupOwner("request-812-30", "request-"), 812);
  for (const char* other : {"zygo-812", "zygo-812-", "zygo--3", "zygo-0-1", "zygo-81x-3",
                            "zygo-812-3x", "zygo-sweep-1", "xzygo-812-3", "zygo-812-3-4"}) {
    EXPECT_EQ(internal::ZygoCgroupOwner(other, "zygo-"), std::nullopt) << other;
  }
}

// PROC_PID_INIT_INO: the host's pid namespace.
bool InHostPidNamespace() {
  struct stat st;
  return stat("/proc/self/ns/pid", &st) == 0 && st.st_ino == 0xEFFFFFFC;
}

class CgroupSweepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to make cgroups";
    absl::StatusOr<std::unique_ptr<CgroupDriver>> host = ProbeCgroupDriver();
    if (!host.ok()) GTEST_SKIP() << "no usable cgroups: " << host.status();
    const std::string name = absl::StrCat("sweep-test-", getpid());
    if (auto* v2 = dynamic_cast<internal::CgroupV2Driver*>(host->get())) {
      if (v2->placement().kind != CgroupPlacementKind::kRootCgroup &&
          v2->placement().kind != CgroupPlacementKind::kDelegatedAncestor) {
        GTEST_SKIP() << "needs a cgroup without processes to make its parent in; here: "
                     << v2->placement().detail;
      }
      const std::string parent = absl::StrCat(v2->parent_dir(), "/", name);
      MakeParent(parent);
      driver_ = std::make_unique<internal::CgroupV2Driver>(internal::FixedV2Placement(parent),
                                                           CgroupProbeOptions{});
      return;
    }
    internal::V1Layout layout = dynamic_cast<internal::CgroupV1Driver&>(**host).layout();
    for (internal::V1Hierarchy* h : {&layout.memory, &layout.pids, &layout.cpu}) {
      h->parent_dir = absl::StrCat(h->parent_dir, "/", name);
      MakeParent(h->parent_dir);
    }
    if (layout.cpuacct.has_value()) {
      layout.cpuacct->parent_dir = absl::StrCat(layout.cpuacct->parent_dir, "/", name);
      MakeParent(layout.cpuacct->parent_dir);
    }
    driver_ = std::make_unique<internal::CgroupV1Driver>(layout, "zygo-");
  }

  void TearDown() override {
    for (pid_t pid : children_) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
    // Deepest first; only what this test made is below the parents.
    for (auto parent = parents_.rbegin(); parent != parents_.rend(); ++parent) RemoveTree(*parent);
  }

  void MakeParent(const std::string& dir) {
    if (std::find(parents_.begin(), parents_.end(), fs::weakly_canonical(dir).string()) !=
        parents_.end()) {
      return;  // co-mounted: one directory under two names
    }
    ASSERT_TRUE(mkdir(dir.c_str(), 0755) == 0 || errno == EEXIST) << dir;
    parents_.push_back(fs::weakly_canonical(dir).string());
  }

  static void RemoveTree(const std::string& dir) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      if (entry.is_directory() && !entry.is_symlink()) RemoveTree(entry.path());
    }
    rmdir(dir.c_str());
  }

  // `relative` (e.g. "zygo-5-1/request-5-2") made in every private parent.
  void Make(const std::string& relative) {
    for (const std::string& parent : parents_) {
      const std::string dir = absl::StrCat(parent, "/", relative);
      ASSERT_EQ(mkdir(dir.c_str(), 0755), 0) << dir << ": " << strerror(errno);
    }
  }

  bool Exists(const std::string& relative) const {
    for (const std::string& parent : parents_) {
      if (!fs::exists(absl::StrCat(parent, "/", relative))) return false;
    }
    return true;
  }

  // A child sleeping `seconds` in `relative` (in every hierarchy), or exiting after them.
  void RunIn(const std::string& relative, int seconds) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      sleep(seconds);
      _exit(0);
    }
    children_.push_back(pid);
    for (const std::string& parent : parents_) {
      std::ofstream(absl::StrCat(parent, "/", relative, "/cgroup.procs")) << pid;
    }
  }

  static std::vector<std::string> Names(const std::vector<StaleCgroup>& stale) {
    std::vector<std::string> names;
    for (const StaleCgroup& cgroup : stale) names.push_back(cgroup.name);
    return names;
  }

  // driver_->SweepStale({.remove = true}) run as pid 1 of a new pid namespace, with
  // `own_proc` in a mount namespace of its own with /proc mounted there (as a container
  // does): its pid ("1"), then a line "NAME removed|kept WHY" per cgroup found.
  std::string SweepFromChildPidNamespace(bool own_proc) {
    int report[2];
    if (pipe(report) != 0) return "pipe failed";
    const pid_t child = fork();
    if (child == 0) {
      close(report[0]);
      if (unshare(CLONE_NEWPID) != 0) _exit(2);
      const pid_t inner = fork();
      if (inner == 0) {
        if (own_proc && (unshare(CLONE_NEWNS) != 0 ||
                         mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
                         mount("proc", "/proc", "proc", 0, nullptr) != 0)) {
          _exit(3);
        }
        std::string out = absl::StrCat(getpid(), "\n");
        for (const StaleCgroup& cgroup : driver_->SweepStale({.remove = true})) {
          absl::StrAppend(&out, cgroup.name, cgroup.removed ? " removed " : " kept ",
                          cgroup.kept_because, "\n");
        }
        _exit(write(report[1], out.data(), out.size()) == static_cast<ssize_t>(out.size()) ? 0 : 4);
      }
      int status = 0;
      waitpid(inner, &status, 0);
      _exit(inner > 0 && WIFEXITED(status) ? WEXITSTATUS(status) : 5);
    }
    close(report[1]);
    std::string out;
    char buffer[4096];
    for (ssize_t n; (n = read(report[0], buffer, sizeof(buffer))) > 0;) out.append(buffer, n);
    close(report[0]);
    int status = 0;
    waitpid(child, &status, 0);
    EXPECT_TRUE(child > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
    return out;
  }

  std::unique_ptr<CgroupDriver> driver_;
  std::vector<std::string> parents_;
  std::vector<pid_t> children_;
};

TEST_F(CgroupSweepTest, AKilledZygosCgroupsGoWithTheirNestedOnesAndNothingElseDoes) {
  const pid_t dead = DeadPid();
  const std::string stale = absl::StrCat("zygo-", dead, "-1");
  Make(stale);
  Make(absl::StrCat(stale, "/zygote-", dead, "-2"));
  Make(absl::StrCat(stale, "/request-", dead, "-3"));
  // Controls: a live process's (our parent's), this process's own, and names Zygo does
  // not give, one of them with the dead pid.
  const std::vector<std::string> controls = {
      absl::StrCat("zygo-", getppid(), "-1"), absl::StrCat("zygo-", getpid(), "-1"),
      absl::StrCat("zygo-", dead, "-x"), absl::StrCat("other-", dead, "-1"),
      absl::StrCat("zygo", dead, "-1")};
  for (const std::string& control : controls) Make(control);

  // Finding removes nothing.
  std::vector<StaleCgroup> found = driver_->SweepStale({});
  ASSERT_THAT(Names(found), ElementsAre(stale));
  EXPECT_EQ(found[0].owner, dead);
  EXPECT_EQ(found[0].nested, 2);
  EXPECT_EQ(found[0].dirs.size(), parents_.size());
  EXPECT_FALSE(found[0].removed);
  EXPECT_TRUE(Exists(stale));

  std::vector<StaleCgroup> swept = driver_->SweepStale({.remove = true});
  ASSERT_THAT(Names(swept), ElementsAre(stale));
  EXPECT_TRUE(swept[0].removed) << swept[0].kept_because;
  EXPECT_FALSE(Exists(stale));
  for (const std::string& control : controls) EXPECT_TRUE(Exists(control)) << control;
  EXPECT_THAT(driver_->SweepStale({}), IsEmpty());
}

TEST_F(CgroupSweepTest, OneWithProcessesOrAForeignCgroupInsideIsKept) {
  const pid_t dead = DeadPid();
  const std::string busy = absl::StrCat("zygo-", dead, "-1");
  const std::string foreign = absl::StrCat("zygo-", dead, "-2");
  Make(busy);
  Make(absl::StrCat(busy, "/request-", dead, "-3"));
  RunIn(absl::StrCat(busy, "/request-", dead, "-3"), 60);
  Make(foreign);
  Make(absl::StrCat(foreign, "/keep-me"));

  std::vector<StaleCgroup> swept = driver_->SweepStale({.remove = true});
  ASSERT_THAT(Names(swept), ElementsAre(busy, foreign));
  EXPECT_FALSE(swept[0].removed);
  EXPECT_THAT(swept[0].kept_because, HasSubstr("processes are still in"));
  EXPECT_FALSE(swept[1].removed);
  EXPECT_THAT(swept[1].kept_because, HasSubstr("/keep-me, which Zygo did not name"));
  EXPECT_TRUE(Exists(absl::StrCat(busy, "/request-", dead, "-3")));
  EXPECT_TRUE(Exists(absl::StrCat(foreign, "/keep-me")));

  // Control: once its process is gone, the same cgroup goes.
  kill(children_[0], SIGKILL);
  waitpid(children_[0], nullptr, 0);
  children_.clear();
  swept = driver_->SweepStale({.remove = true});
  ASSERT_THAT(Names(swept), ElementsAre(busy, foreign));
  EXPECT_TRUE(swept[0].removed) << swept[0].kept_because;
  EXPECT_FALSE(Exists(busy));
}

TEST_F(CgroupSweepTest, ItsLastProcessesAreWaitedFor) {
  const pid_t dead = DeadPid();
  const std::string stale = absl::StrCat("zygo-", dead, "-1");
  Make(stale);
  RunIn(stale, 1);  // leaves by itself after a second
  std::vector<StaleCgroup> swept =
      driver_->SweepStale({.remove = true, .wait_for_members = absl::Seconds(10)});
  ASSERT_THAT(Names(swept), ElementsAre(stale));
  EXPECT_TRUE(swept[0].removed) << swept[0].kept_because;
}

TEST_F(CgroupSweepTest, EverywhereLooksBelowOtherCgroups) {
  const pid_t dead = DeadPid();
  const std::string stale = absl::StrCat("other-parent/zygo-", dead, "-1");
  Make("other-parent");
  Make(stale);
  EXPECT_THAT(driver_->SweepStale({}), IsEmpty());
  // The whole hierarchy: other (dead) zygos' cgroups may be found too; only ours are asked
  // about, and nothing is removed.
  const std::string name = absl::StrCat("zygo-", dead, "-1");
  std::set<std::string> names;
  for (const StaleCgroup& cgroup : driver_->SweepStale({.everywhere = true})) {
    names.insert(cgroup.name);
  }
  EXPECT_TRUE(names.count(name)) << "not found everywhere";

  // The same without a driver, from the mounts alone (zygo doctor's sweep), in every
  // hierarchy the driver uses.
  absl::StatusOr<std::vector<StaleCgroup>> found = SweepStaleCgroupsEverywhere({});
  ASSERT_TRUE(found.ok()) << found.status();
  auto ours = std::find_if(found->begin(), found->end(),
                           [&](const StaleCgroup& cgroup) { return cgroup.name == name; });
  ASSERT_NE(ours, found->end()) << "not found from the mounts";
  EXPECT_EQ(ours->dirs.size(), parents_.size());
  EXPECT_FALSE(ours->removed);
  EXPECT_TRUE(Exists(stale));
  // Control: a directory that is no cgroup mount holds nothing to sweep.
  EXPECT_EQ(SweepStaleCgroupsEverywhere({}, ::testing::TempDir()).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

// kill(2) from a child pid namespace knows no process outside it: a live zygo there would
// look dead. Both ways a container shows it (NSpid with two pids through the host's /proc,
// and its own /proc with one) keep what they find.
TEST_F(CgroupSweepTest, FromAChildPidNamespaceTheyAreReportedNotRemoved) {
  if (!InHostPidNamespace()) GTEST_SKIP() << "the control needs the host's pid namespace";
  const std::string stale = absl::StrCat("zygo-", DeadPid(), "-1");
  Make(stale);
  for (bool own_proc : {false, true}) {
    const std::string out = SweepFromChildPidNamespace(own_proc);
    EXPECT_THAT(out, StartsWith("1\n")) << "not pid 1 of a new pid namespace";
    EXPECT_THAT(out, HasSubstr(absl::StrCat(stale,
                                            " kept this process is in a child pid "
                                            "namespace (",
                                            own_proc ? "pid:[" : "NSpid ")))
        << out;
    EXPECT_TRUE(Exists(stale));
  }
  // Control: the same sweep from the host's pid namespace removes it.
  std::vector<StaleCgroup> swept = driver_->SweepStale({.remove = true});
  ASSERT_THAT(Names(swept), ElementsAre(stale));
  EXPECT_TRUE(swept[0].removed) << swept[0].kept_because;
  EXPECT_FALSE(Exists(stale));
}

}  // namespace
}  // namespace zygo::core
