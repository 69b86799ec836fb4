// Unit tests of where the cgroup v2 driver puts sandbox cgroups, on fake cgroup2 trees in
// $TEST_TMPDIR shaped like the hosts users have: a process-free root, a cgroup zygo has
// to itself (a Delegate=yes service, a container's entry point), one it shares (a login
// session, a terminal), a container's root shared with its other processes. The systemd
// path is tried for real in the v2 lane (testing/v2lane), against a real systemd.
#include "core/internal/cgroup_v2_placement.h"

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/cgroup.h"
#include "core/host_features.h"
#include "core/internal/cgroup_test_files.h"
#include "core/internal/cgroup_v2.h"
#include "gtest/gtest.h"

namespace zygo::core {
namespace {

namespace fs = std::filesystem;

using testing::ReadAll;
using testing::WriteAll;

constexpr char kAllControllers[] = "cpuset cpu io memory hugetlb pids rdma misc\n";

class Cgroup2Host : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = testing::FreshScratchDir("cgroup_v2_placement_test");
    root_ = base_ / "root";
    fs::create_directories(root_);
    WriteAll(root_ / "cgroup.controllers", kAllControllers);
    WriteAll(root_ / "cgroup.subtree_control", "memory pids\n");
    WriteAll(root_ / "cgroup.procs", absl::StrCat("1\n", getpid(), "\n"));
    options_.mount_root = root_.string();
    options_.self_cgroup_file = (base_ / "self_cgroup").string();
    options_.systemd_marker = "";  // never ask a systemd
  }

  void TearDown() override { fs::remove_all(base_); }

  // A non-root cgroup below the fake root, with `procs` in it.
  fs::path MakeCgroup(const std::string& path, const std::string& procs,
                      const std::string& controllers = "cpu memory pids\n") {
    fs::path dir = root_ / path;
    fs::create_directories(dir);
    WriteAll(dir / "cgroup.type", "domain\n");
    WriteAll(dir / "cgroup.controllers", controllers);
    WriteAll(dir / "cgroup.subtree_control", "");
    WriteAll(dir / "cgroup.procs", procs);
    return dir;
  }

  void LiveIn(const std::string& path) {
    WriteAll(base_ / "self_cgroup", absl::StrCat("0::", path, "\n"));
  }

  static std::string Self() { return absl::StrCat(getpid(), "\n"); }

  // The placement, with the facts read from the fake tree as the probe reads the host's.
  absl::StatusOr<internal::V2PlacementPlan> Plan() const {
    return internal::PlanV2Placement(options_, ReadCgroupFacts(options_));
  }

  fs::path base_;
  fs::path root_;
  CgroupProbeOptions options_;
};

TEST_F(Cgroup2Host, InTheRootCgroupSandboxesGoBelowIt) {
  LiveIn("/");
  absl::StatusOr<internal::V2PlacementPlan> plan = Plan();
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->placement.kind, CgroupPlacementKind::kRootCgroup);
  EXPECT_EQ(plan->placement.parent_dir, root_.string());
}

TEST_F(Cgroup2Host, RootWithoutAControllerNamesIt) {
  WriteAll(root_ / "cgroup.controllers", "memory io pids\n");
  LiveIn("/");
  absl::StatusOr<internal::V2PlacementPlan> plan = Plan();
  ASSERT_FALSE(plan.ok());
  EXPECT_TRUE(absl::StrContains(plan.status().message(), "cpu")) << plan.status();
}

// A Delegate=yes service, or a container's entry point: zygo moves into a leaf, turns the
// controllers on where it was, and moves back and removes the leaf when it is done.
TEST_F(Cgroup2Host, AloneInItsCgroupZygoMovesIntoALeafAndBack) {
  const fs::path service = MakeCgroup("system.slice/zygo.service", Self());
  LiveIn("/system.slice/zygo.service");
  absl::StatusOr<std::unique_ptr<CgroupDriver>> driver = ProbeCgroupDriver(options_);
  ASSERT_TRUE(driver.ok()) << driver.status();
  EXPECT_EQ((*driver)->placement().kind, CgroupPlacementKind::kLeafOfOwnCgroup);
  EXPECT_EQ((*driver)->placement().parent_dir, service.string());
  EXPECT_TRUE(absl::StrContains((*driver)->placement().detail, "has to itself"));
  // Reading only, so far: nothing was made.
  EXPECT_EQ(testing::CountSubdirectories(service), 0);

  ASSERT_TRUE((*driver)->Prepare().ok());
  const std::string leaf_name = absl::StrCat("zygo-", getpid(), "-");
  fs::path leaf;
  for (const auto& entry : fs::directory_iterator(service)) {
    if (entry.is_directory()) leaf = entry.path();
  }
  ASSERT_FALSE(leaf.empty());
  EXPECT_TRUE(absl::StartsWith(leaf.filename().string(), leaf_name)) << leaf;
  EXPECT_EQ(ReadAll(leaf / "cgroup.procs"), absl::StrCat(getpid()));
  EXPECT_EQ(ReadAll(service / "cgroup.subtree_control"), "+memory +pids +cpu");
  ASSERT_TRUE((*driver)->Prepare().ok());  // once only
  EXPECT_EQ(testing::CountSubdirectories(service), 1);

  driver->reset();
  EXPECT_EQ(ReadAll(service / "cgroup.subtree_control"), "-memory -pids -cpu");
  EXPECT_EQ(ReadAll(service / "cgroup.procs"), absl::StrCat(getpid()));
}

// A container with a private cgroup namespace sees its own cgroup as "/": not the real
// root (it has cgroup.type), so the no-internal-process rule applies to it.
TEST_F(Cgroup2Host, AContainersRootIsNotTheRootCgroup) {
  WriteAll(root_ / "cgroup.type", "domain\n");
  WriteAll(root_ / "cgroup.procs", Self());
  LiveIn("/");
  absl::StatusOr<internal::V2PlacementPlan> alone = Plan();
  ASSERT_TRUE(alone.ok()) << alone.status();
  EXPECT_EQ(alone->placement.kind, CgroupPlacementKind::kLeafOfOwnCgroup);

  // Shared with the container's other processes: they make room, as docker-in-docker's
  // entry point has them do (the move itself is tried on a real kernel, in the v2 lane).
  WriteAll(root_ / "cgroup.procs", absl::StrCat("1\n", getpid(), "\n7\n"));
  absl::StatusOr<internal::V2PlacementPlan> shared = Plan();
  ASSERT_TRUE(shared.ok()) << shared.status();
  EXPECT_EQ(shared->placement.kind, CgroupPlacementKind::kContainerRoot);
  EXPECT_EQ(shared->placement.parent_dir, root_.string());
  EXPECT_TRUE(absl::StrContains(shared->placement.detail, (root_ / "init").string()))
      << shared->placement.detail;

  // Once they have moved, the next zygo finds the root empty above its own cgroup.
  WriteAll(root_ / "cgroup.procs", "");
  MakeCgroup("init", absl::StrCat("1\n", getpid(), "\n7\n"));
  LiveIn("/init");
  absl::StatusOr<internal::V2PlacementPlan> after = Plan();
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->placement.kind, CgroupPlacementKind::kDelegatedAncestor);
  EXPECT_EQ(after->placement.parent_dir, root_.string());
}

// No systemd: a login session's cgroup is shared with the shell, so the nearest ancestor
// without processes that zygo may manage is used.
TEST_F(Cgroup2Host, SharingItsCgroupWithoutSystemdTakesTheNearestEmptyAncestor) {
  const fs::path slice = MakeCgroup("user.slice", "");
  MakeCgroup("user.slice/session-3.scope", absl::StrCat("412\n", getpid(), "\n"));
  LiveIn("/user.slice/session-3.scope");
  absl::StatusOr<internal::V2PlacementPlan> plan = Plan();
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->placement.kind, CgroupPlacementKind::kDelegatedAncestor);
  EXPECT_EQ(plan->placement.parent_dir, slice.string());
  EXPECT_TRUE(absl::StrContains(plan->placement.detail, "holds 1 other process"));
}

// An ancestor with processes cannot be a parent; one that is not given the controllers
// cannot either; the walk goes on to the root.
TEST_F(Cgroup2Host, TheWalkSkipsAncestorsThatCannotBeParents) {
  MakeCgroup("a", "", "io\n");
  MakeCgroup("a/b", "99\n");
  MakeCgroup("a/b/c", absl::StrCat("412\n", getpid(), "\n"));
  LiveIn("/a/b/c");
  absl::StatusOr<internal::V2PlacementPlan> plan = Plan();
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->placement.kind, CgroupPlacementKind::kDelegatedAncestor);
  EXPECT_EQ(plan->placement.parent_dir, root_.string());
}

// With systemd running, a shared cgroup is never worked around by hand: systemd owns the
// slices above it, so zygo asks it for a scope (or says why it cannot).
TEST_F(Cgroup2Host, UnderSystemdASharedCgroupAsksForAScope) {
  fs::create_directories(base_ / "run-systemd-system");
  options_.systemd_marker = (base_ / "run-systemd-system").string();
  MakeCgroup("user.slice", "");
  MakeCgroup("user.slice/session-3.scope", absl::StrCat("412\n", getpid(), "\n"));
  LiveIn("/user.slice/session-3.scope");
  absl::StatusOr<internal::V2PlacementPlan> plan = Plan();
  if (plan.ok()) {
    EXPECT_EQ(plan->placement.kind, CgroupPlacementKind::kSystemdScope);
    EXPECT_TRUE(absl::StrContains(plan->placement.detail, "Delegate=yes"));
  } else {
    // No zygo-scope next to this test, or no manager to reach here: it says which.
    const std::string message(plan.status().message());
    EXPECT_TRUE(absl::StrContains(message, "zygo-scope") ||
                absl::StrContains(message, "cannot be reached"))
        << message;
    EXPECT_FALSE(absl::StrContains(message, "nearest")) << message;
  }
}

TEST_F(Cgroup2Host, AMountOfAnotherNamespacesTreeIsRefused) {
  MakeCgroup("machine.slice/ctr", "1\n");
  LiveIn("/machine.slice/ctr");
  absl::StatusOr<internal::V2PlacementPlan> plan = Plan();
  ASSERT_FALSE(plan.ok());
  EXPECT_TRUE(absl::StrContains(plan.status().message(), "mount cgroup2 afresh")) << plan.status();
}

TEST_F(Cgroup2Host, OutsideItsCgroupNamespaceIsRefused) {
  LiveIn("/../other.scope");
  absl::StatusOr<internal::V2PlacementPlan> plan = Plan();
  ASSERT_FALSE(plan.ok());
  EXPECT_TRUE(absl::StrContains(plan.status().message(), "outside this cgroup namespace"));
}

}  // namespace
}  // namespace zygo::core
