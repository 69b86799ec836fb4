#include "bench/cold/cold_variants.h"

#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "core/base/status_macros.h"
#include "core/mount_plan.h"
#include "core/plan.h"
#include "core/spec.h"

namespace zygo::bench {
namespace {

// The spec `zygo run host CMD` builds with no flags: its defaults are what bwrap and
// the bare run are given, so all three run CMD in the same environment.
core::Spec DefaultHostSpec(const Workload& workload) {
  core::Spec spec;
  spec.root = core::RootFs::Host();
  spec.argv = workload.argv;
  return spec;
}

bool UnderDev(const std::string& path) { return path == "/dev" || absl::StartsWith(path, "/dev/"); }

// zygo masks parts of /proc and builds its own /dev; bwrap's --proc and --dev are
// its equivalents (it does not mask /proc), so only the image's root is mirrored.
bool IsImageRootOp(const core::MountOp& op) {
  if (op.sandbox_path.empty() || UnderDev(op.sandbox_path)) return false;
  return !(op.sandbox_path == "/proc" || absl::StartsWith(op.sandbox_path, "/proc/"));
}

Command BwrapCommand(const std::string& bwrap, const std::vector<std::string>& root_args,
                     const core::Spec& spec) {
  Command command;
  // --unshare-all only *tries* a user namespace (--unshare-user-try); asking for it
  // outright makes bwrap fail rather than quietly skip one, since zygo always makes one.
  command.argv = {bwrap, "--unshare-all", "--unshare-user", "--die-with-parent", "--new-session"};
  command.argv.insert(command.argv.end(), root_args.begin(), root_args.end());
  for (const char* arg : {"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"}) {
    command.argv.push_back(arg);
  }
  command.argv.insert(command.argv.end(),
                      {"--hostname", spec.hostname, "--chdir", spec.workdir, "--clearenv"});
  for (const std::string& entry : core::BuildEnvironment(spec)) {
    size_t eq = entry.find('=');
    command.argv.insert(command.argv.end(),
                        {"--setenv", entry.substr(0, eq), entry.substr(eq + 1)});
  }
  command.argv.insert(command.argv.end(), spec.argv.begin(), spec.argv.end());
  return command;
}

}  // namespace

std::vector<Workload> ColdWorkloads() {
  return {
      {"/bin/true", {"/bin/true"}},
      {"/usr/bin/python3 -c pass", {"/usr/bin/python3", "-c", "pass"}},
  };
}

absl::StatusOr<std::vector<std::string>> BwrapRootArgs() {
  ZYGO_ASSIGN_OR_RETURN(core::MountPlan plan,
                        core::BuildMountPlan(DefaultHostSpec(ColdWorkloads()[0])));
  std::vector<std::string> args;
  for (const core::MountOp& op : plan.ops) {
    if (!IsImageRootOp(op)) continue;
    if (op.kind == core::MountOpKind::kSymlink) {
      args.insert(args.end(), {"--symlink", op.source, op.sandbox_path});
    } else if (op.kind == core::MountOpKind::kBind) {
      absl::string_view host_path = op.source;
      if (!absl::ConsumePrefix(&host_path, core::kOldRoot)) continue;  // not from the host
      args.insert(args.end(), {op.read_only() ? "--ro-bind" : "--bind", std::string(host_path),
                               op.sandbox_path});
    } else if (op.kind == core::MountOpKind::kTmpfs && op.sandbox_path != "/tmp") {
      args.insert(args.end(), {"--tmpfs", op.sandbox_path});
    }
    // kMkdir and kTouch make mountpoints, which bwrap makes for itself.
  }
  if (args.empty()) return absl::InternalError("zygo's host image mounts nothing from the host");
  return args;
}

absl::StatusOr<std::vector<ColdCase>> BuildColdCases(const std::string& zygo,
                                                     const std::string& bwrap, bool with_peer) {
  std::vector<std::string> root_args;
  if (with_peer) {
    ZYGO_ASSIGN_OR_RETURN(root_args, BwrapRootArgs());
  }
  std::vector<ColdCase> cases;
  for (const Workload& workload : ColdWorkloads()) {
    core::Spec spec = DefaultHostSpec(workload);
    Command through_zygo{{zygo, "run", spec.root.Describe()}};
    through_zygo.argv.insert(through_zygo.argv.end(), workload.argv.begin(), workload.argv.end());
    cases.push_back({workload.name, kVariantZygo, through_zygo});
    if (with_peer) {
      cases.push_back({workload.name, kVariantBwrap, BwrapCommand(bwrap, root_args, spec)});
    }
    Command bare{workload.argv, core::BuildEnvironment(spec), /*inherit_env=*/false, spec.workdir};
    cases.push_back({workload.name, kVariantBare, bare});
  }
  return cases;
}

}  // namespace zygo::bench
