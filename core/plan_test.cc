// Plan building is pure logic over the host's file tree: no privileges needed.
#include "core/plan.h"

#include <linux/mount.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <functional>

#include "core/loosening.h"
#include "core/seccomp_compiled.h"
#include "gtest/gtest.h"

namespace zygo::core {
namespace {

Spec HostSpec() {
  Spec spec;
  spec.root = RootFs::Host();
  spec.argv = {"true"};
  return spec;
}

const MountOp* FindOp(const Plan& plan, MountOpKind kind, const std::string& path) {
  for (const MountOp& op : plan.mounts.ops) {
    if (op.kind == kind && op.sandbox_path == path) return &op;
  }
  return nullptr;
}

TEST(BuildPlan, HostImageBindsUsrReadOnlyAndBuildsProcDevTmp) {
  auto plan = BuildPlan(HostSpec());
  ASSERT_TRUE(plan.ok()) << plan.status();
  const MountOp* usr = FindOp(*plan, MountOpKind::kBind, "/usr");
  ASSERT_NE(usr, nullptr);
  EXPECT_TRUE(usr->read_only());
  EXPECT_TRUE(usr->attr_set & MOUNT_ATTR_NOSUID);
  ASSERT_NE(FindOp(*plan, MountOpKind::kProc, "/proc"), nullptr);
  const MountOp* tmp = FindOp(*plan, MountOpKind::kTmpfs, "/tmp");
  ASSERT_NE(tmp, nullptr);
  EXPECT_NE(tmp->data.find("size=67108864"), std::string::npos);
  ASSERT_NE(FindOp(*plan, MountOpKind::kBind, "/dev/null"), nullptr);
  ASSERT_NE(FindOp(*plan, MountOpKind::kBind, "/proc/sys"), nullptr);
  EXPECT_EQ(plan->mounts.writable_paths, (std::vector<std::string>{"/tmp", "/dev/shm"}));
}

TEST(BuildPlan, EnvironmentIsTheImagesAndTheFlagsOnly) {
  setenv("ZYGO_PLAN_TEST_HOST_VAR", "x", 1);
  Spec spec = HostSpec();
  spec.env = {"A=1", "PATH=/custom/bin"};
  auto plan = BuildPlan(spec);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->env,
            (std::vector<std::string>{"PATH=/custom/bin", "HOME=/tmp", "HOSTNAME=zygo", "A=1"}));
  EXPECT_EQ(plan->exec_candidates, (std::vector<std::string>{"/custom/bin/true"}));
}

TEST(BuildPlan, CommandWithSlashIsNotSearched) {
  Spec spec = HostSpec();
  spec.argv = {"/bin/echo", "hi"};
  auto plan = BuildPlan(spec);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->exec_candidates, (std::vector<std::string>{"/bin/echo"}));
}

TEST(BuildPlan, RejectsBadSpecsBeforeAnythingRuns) {
  struct Case {
    std::function<void(Spec&)> change;
    std::string message_part;
  };
  for (const Case& c : std::vector<Case>{
           {[](Spec& s) { s.root = RootFs::Directory("/no/such/dir"); }, "realpath"},
           {[](Spec& s) { s.root = RootFs::Directory("relative"); }, "absolute path"},
           {[](Spec& s) { s.workdir = "/proc/self/fd/3"; }, "workdir"},
           {[](Spec& s) { s.workdir = "relative"; }, "workdir"},
           {[](Spec& s) { s.env = {"NOVALUE"}; }, "KEY=VALUE"},
           {[](Spec& s) { s.hostname = "bad host"; }, "hostname"},
           {[](Spec& s) {
              s.volumes = {{"/no/such/source", "/data", false}};
            },
            "/no/such/source"},
           {[](Spec& s) {
              s.volumes = {{"/tmp", "/proc/x", false}};
            },
            "may not be"},
           {[](Spec& s) {
              s.volumes = {{"/tmp", "relative", false}};
            },
            "clean absolute"},
           {[](Spec& s) {
              s.volumes = {{"/tmp", "/usr/zygo-not-there", false}};
            },
            "read-only host"},
           {[](Spec& s) { s.memory_bytes = 1024; }, "at least 4m"},
           {[](Spec& s) { s.function_zygotes = -1; }, "cannot be negative"},
       }) {
    Spec spec = HostSpec();
    c.change(spec);
    auto plan = BuildPlan(spec);
    ASSERT_FALSE(plan.ok()) << c.message_part;
    EXPECT_NE(plan.status().message().find(c.message_part), std::string::npos)
        << plan.status().message();
  }
}

TEST(BuildPlan, DirImageNeedsItsMountpointsAndIsNeverWrittenTo) {
  std::string dir = std::string(getenv("TEST_TMPDIR")) + "/image";
  std::filesystem::create_directories(dir);
  Spec spec = HostSpec();
  spec.root = RootFs::Directory(dir);
  auto missing = BuildPlan(spec);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("mountpoint /dev must exist"), std::string::npos)
      << missing.status().message();
  for (const char* sub : {"/dev", "/proc", "/tmp"}) std::filesystem::create_directory(dir + sub);
  auto plan = BuildPlan(spec);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const MountOp& root = plan->mounts.ops.front();
  EXPECT_EQ(root.kind, MountOpKind::kBindChecked);
  EXPECT_TRUE(root.read_only());
  // No mkdir inside the image: only inside the /dev tmpfs Zygo mounts itself.
  for (const MountOp& op : plan->mounts.ops) {
    if (op.kind == MountOpKind::kMkdir && op.sandbox_path.rfind("/dev/", 0) != 0) {
      ADD_FAILURE() << "mkdir in a dir image: " << op.sandbox_path;
    }
  }
}

// A source checked once (a function's code at `zygo up`) is refused when it no longer
// resolves to itself; the same path without the flag is followed, as `-v` always has been.
TEST(BuildPlan, AVolumeThatMustResolveToItselfIsRefusedThroughASymlink) {
  Spec spec = HostSpec();
  const std::string dir = getenv("TEST_TMPDIR");
  std::filesystem::create_directories(dir + "/real");
  std::filesystem::remove(dir + "/swapped");
  std::filesystem::create_directory_symlink("/", dir + "/swapped");
  spec.volumes = {{dir + "/real", "/code", true, /*must_resolve_to_itself=*/true}};
  EXPECT_TRUE(BuildPlan(spec).ok());
  spec.volumes = {{dir + "/swapped", "/code", true, /*must_resolve_to_itself=*/false}};
  EXPECT_TRUE(BuildPlan(spec).ok()) << "control: followed without the flag";
  spec.volumes = {{dir + "/swapped", "/code", true, /*must_resolve_to_itself=*/true}};
  absl::StatusOr<Plan> refused = BuildPlan(spec);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("/swapped now resolves to /"), absl::string_view::npos)
      << refused.status();
}

TEST(BuildPlan, ReadWriteVolumesAreTheOnlyExtraWritablePlaces) {
  Spec spec = HostSpec();
  std::string src = getenv("TEST_TMPDIR");
  spec.volumes = {{src, "/data", false}, {src, "/ro", true}};
  auto plan = BuildPlan(spec);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->mounts.writable_paths, (std::vector<std::string>{"/tmp", "/dev/shm", "/data"}));
  EXPECT_TRUE(FindOp(*plan, MountOpKind::kBindChecked, "/ro")->read_only());
  EXPECT_FALSE(FindOp(*plan, MountOpKind::kBindChecked, "/data")->read_only());
}

}  // namespace
}  // namespace zygo::core

namespace zygo::core {
namespace {

TEST(BuildPlan, NetworkModesAreCheckedAndOnlyAllowFlagsLoosen) {
  Spec spec = HostSpec();
  spec.net = NetMode::kHost;
  EXPECT_FALSE(BuildPlan(spec).ok());  // --net host without --allow-host-net
  LooseningGrant::AllowHostNet(spec.loosening);
  auto host = BuildPlan(spec);
  ASSERT_TRUE(host.ok()) << host.status();
  EXPECT_EQ(host->namespaces & CLONE_NEWNET, 0u);

  spec = HostSpec();
  LooseningGrant::AllowHostNet(spec.loosening);  // alone: --net host, as before
  auto implied = BuildPlan(spec);
  ASSERT_TRUE(implied.ok()) << implied.status();
  EXPECT_EQ(implied->spec.net, NetMode::kHost);

  spec = HostSpec();
  spec.net = NetMode::kEgress;
  EXPECT_FALSE(BuildPlan(spec).ok());  // egress without --allow
  spec.allow = {"api.example.com:443"};
  auto egress = BuildPlan(spec);
  ASSERT_TRUE(egress.ok()) << egress.status();
  EXPECT_NE(egress->namespaces & CLONE_NEWNET, 0u);
  bool resolv = false;
  for (const MountOp& op : egress->mounts.ops) {
    if (op.kind == MountOpKind::kWriteFile) {
      resolv = true;
      EXPECT_EQ(op.sandbox_path, "/etc/resolv.conf");
      EXPECT_EQ(op.data.rfind("nameserver 127.0.0.53\n", 0), 0u);
    }
  }
  EXPECT_TRUE(resolv);
  LooseningGrant::AllowHostNet(spec.loosening);
  EXPECT_FALSE(BuildPlan(spec).ok());  // --allow-host-net with egress

  spec = HostSpec();
  spec.allow = {"api.example.com:443"};
  EXPECT_FALSE(BuildPlan(spec).ok());  // --allow with none
  spec.net = NetMode::kFull;
  EXPECT_FALSE(BuildPlan(spec).ok());  // --allow with full
  // --net full asks Zygo's resolver too, never the host's nameserver (often on the host's
  // loopback or a private address, neither reachable from the sandbox).
  spec.allow.clear();
  auto full = BuildPlan(spec);
  ASSERT_TRUE(full.ok()) << full.status();
  const MountOp* full_resolv = FindOp(*full, MountOpKind::kWriteFile, "/etc/resolv.conf");
  ASSERT_NE(full_resolv, nullptr);
  EXPECT_EQ(full_resolv->data, "nameserver 127.0.0.53\noptions edns0\n");

  auto none = BuildPlan(HostSpec());
  ASSERT_TRUE(none.ok());
  for (const MountOp& op : none->mounts.ops) EXPECT_NE(op.sandbox_path, "/etc/resolv.conf");
}

std::string LimitOf(const Plan& plan, const std::string& name) {
  for (const UsernsLimit& limit : plan.userns_limits) {
    if (limit.path == "/proc/sys/user/" + name) return limit.value;
  }
  return "";
}

// A runtime zygote gets the runtime's programs and limits for all its function zygotes;
// every other sandbox keeps the programs and limits it had.
TEST(BuildPlan, ARuntimeZygoteGetsItsOwnSeccompProfileAndLimits) {
  Spec warm = HostSpec();
  warm.nested_namespaces = 10;
  Spec runtime = warm;
  runtime.function_zygotes = 4;
  auto warm_plan = BuildPlan(warm);
  auto runtime_plan = BuildPlan(runtime);
  ASSERT_TRUE(warm_plan.ok() && runtime_plan.ok());
  EXPECT_EQ(warm_plan->seccomp.allowlist.size(), CompiledSeccompPrograms().allowlist.size());
  EXPECT_EQ(runtime_plan->seccomp.allowlist.size(),
            CompiledSeccompPrograms(SeccompProfile::kRuntimeZygote).allowlist.size());
  EXPECT_NE(runtime_plan->seccomp.allowlist.size(), warm_plan->seccomp.allowlist.size());
  EXPECT_EQ(LimitOf(*warm_plan, "max_user_namespaces"), "10");
  EXPECT_EQ(LimitOf(*warm_plan, "max_inotify_instances"), "16");
  EXPECT_EQ(LimitOf(*runtime_plan, "max_user_namespaces"), "48");    // 4 x (1 + 10 + 1)
  EXPECT_EQ(LimitOf(*runtime_plan, "max_inotify_instances"), "80");  // 16 x (1 + 4)
  EXPECT_EQ(LimitOf(*runtime_plan, "max_inotify_watches"), "40960");
}

}  // namespace
}  // namespace zygo::core
