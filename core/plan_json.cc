#include "core/plan_json.h"

#include <sched.h>

#include "nlohmann/json.hpp"

namespace zygo::core {
namespace {

using Json = nlohmann::ordered_json;

const char* NetworkDescription(NetMode mode) {
  switch (mode) {
    case NetMode::kNone:
      return "loopback only";
    case NetMode::kEgress:
      return "egress: allowlisted names only, through pasta and Zygo's resolver";
    case NetMode::kFull:
      return "full: public addresses through pasta";
    case NetMode::kHost:
      return "host (--allow-host-net)";
  }
  return "loopback only";
}

const char* KindName(MountOpKind kind) {
  switch (kind) {
    case MountOpKind::kMkdir:
      return "mkdir";
    case MountOpKind::kTouch:
      return "file";
    case MountOpKind::kSymlink:
      return "symlink";
    case MountOpKind::kBind:
      return "bind";
    case MountOpKind::kBindChecked:
      return "bind-checked";
    case MountOpKind::kTmpfs:
      return "tmpfs";
    case MountOpKind::kProc:
      return "proc";
    case MountOpKind::kReadOnly:
      return "remount-ro";
    case MountOpKind::kWriteFile:
      return "write-file";
  }
  return "?";
}

Json MountsJson(const MountPlan& mounts) {
  Json ops = Json::array();
  for (const MountOp& op : mounts.ops) {
    Json entry = {{"op", KindName(op.kind)},
                  {"path", op.sandbox_path.empty() ? "/" : op.sandbox_path}};
    const bool bind = op.kind == MountOpKind::kBind || op.kind == MountOpKind::kBindChecked;
    if (bind) {
      // Sources are shown as host paths, without the staging prefix.
      std::string source = op.source;
      if (source.rfind(kOldRoot, 0) == 0) source = source.substr(sizeof(kOldRoot) - 1);
      if (source.rfind(kNewRoot, 0) == 0) source = "sandbox:" + source.substr(sizeof(kNewRoot) - 1);
      entry["source"] = source;
    }
    if (op.kind == MountOpKind::kSymlink) entry["target"] = op.source;
    if (op.kind == MountOpKind::kTmpfs) entry["options"] = op.data;
    if (bind || op.kind == MountOpKind::kTmpfs || op.kind == MountOpKind::kProc ||
        op.kind == MountOpKind::kReadOnly) {
      entry["read_only"] = op.read_only();
    }
    ops.push_back(entry);
  }
  return ops;
}

Json NamespacesJson(uint64_t flags) {
  Json names = Json::array();
  const std::pair<uint64_t, const char*> all[] = {{CLONE_NEWUSER, "user"},    {CLONE_NEWPID, "pid"},
                                                  {CLONE_NEWNS, "mount"},     {CLONE_NEWNET, "net"},
                                                  {CLONE_NEWIPC, "ipc"},      {CLONE_NEWUTS, "uts"},
                                                  {CLONE_NEWCGROUP, "cgroup"}};
  for (const auto& [flag, name] : all) {
    if (flags & flag) names.push_back(name);
  }
  return names;
}

}  // namespace

std::string PlanToJson(const Plan& plan, const CgroupChoice& cgroup) {
  const Spec& spec = plan.spec;
  Json landlock_rules = Json::array();
  for (const LandlockRule& rule : plan.landlock.rules) {
    landlock_rules.push_back({{"path", rule.path}, {"access", rule.access}});
  }
  Json rlimits = Json::object();
  for (const Rlimit& limit : plan.rlimits) rlimits[limit.name] = {limit.soft, limit.hard};
  Json json = {
      {"image", spec.ImageLabel()},
      {"argv", spec.argv},
      {"exec_candidates", plan.exec_candidates},
      {"env", plan.env},
      {"workdir", spec.workdir},
      {"hostname", spec.hostname},
      {"user",
       {{"uid", plan.identity.uid},
        {"gid", plan.identity.gid},
        {"host_uid", plan.identity.host_uid},
        {"host_gid", plan.identity.host_gid}}},
      {"namespaces", NamespacesJson(plan.namespaces)},
      {"network", NetworkDescription(spec.net)},
      {"net_mode", NetModeName(spec.net)},
      {"allow", spec.allow},
      {"mounts", MountsJson(plan.mounts)},
      {"cgroup",
       {{"driver", cgroup.driver},
        {"placement", cgroup.placement},
        {"placement_detail", cgroup.detail},
        {"memory_bytes", plan.cgroup_limits.memory_bytes},
        {"pids_max", plan.cgroup_limits.pids_max},
        {"cpus", plan.cgroup_limits.cpus},
        {"allow_unlimited", spec.loosening.unlimited()}}},
      {"timeout_ms", spec.timeout_ms},
      {"capabilities", "all dropped (bounding, ambient, inheritable, permitted, effective)"},
      {"no_new_privs", true},
      {"seccomp",
       {{"default_action", "errno(EPERM)"},
        {"allowed_syscalls", plan.seccomp.allowed_syscalls},
        {"bad_arch_action", "kill_process (i386 and x32 refused)"},
        {"denied_examples", plan.seccomp.denied_examples},
        {"argument_checks", {"clone: no CLONE_NEW* flags", "ioctl: no TIOCSTI/TIOCLINUX"}}}},
      {"landlock",
       {{"abi", plan.landlock.abi},
        {"handled_fs", plan.landlock.handled_fs},
        {"scoped", plan.landlock.scoped},
        {"rules", landlock_rules}}},
      {"rlimits", rlimits},
  };
  return json.dump(2) + "\n";
}

}  // namespace zygo::core
