#include "core/plan.h"

#include <sched.h>

#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/base/status_macros.h"
#include "core/host_features.h"
#include "core/init/init_layout.h"
#include "core/seccomp_compiled.h"

namespace zygo::core {
namespace {

constexpr char kDefaultPath[] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

absl::Status CheckSpec(const Spec& spec) {
  if (spec.argv.empty() || spec.argv[0].empty()) {
    return absl::InvalidArgumentError("no command given: zygo run IMAGE CMD [ARG...]");
  }
  const std::string& workdir = spec.workdir;
  if (workdir.empty() || workdir[0] != '/' || absl::StrContains(workdir, "/..") ||
      workdir == "/proc" || absl::StartsWith(workdir, "/proc/")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "workdir '", workdir, "' must be an absolute path outside /proc, without '..'"));
  }
  if (spec.hostname.empty() || spec.hostname.size() > 64 ||
      spec.hostname.find_first_not_of(
          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.") !=
          std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("hostname '", spec.hostname, "' must be 1-64 letters, digits, '-' or '.'"));
  }
  if (spec.memory_bytes < (4LL << 20)) {
    return absl::InvalidArgumentError("memory limit must be at least 4m");
  }
  if (spec.pids_limit < 1) return absl::InvalidArgumentError("pids limit must be at least 1");
  if (spec.nested_namespaces < 0 || spec.function_zygotes < 0) {
    return absl::InvalidArgumentError("nested namespaces and function zygotes cannot be negative");
  }
  if (spec.cpus < 0.01) return absl::InvalidArgumentError("--cpus must be at least 0.01");
  for (const std::string& entry : spec.env) {
    size_t eq = entry.find('=');
    if (eq == std::string::npos || eq == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "-e '", entry, "': use KEY=VALUE (zygo never copies the host's environment)"));
    }
  }
  return absl::OkStatus();
}

// Only --allow-... flags loosen: --net host needs --allow-host-net, and --allow entries
// go only with --net egress, which needs at least one.
absl::Status CheckNetwork(const Spec& spec) {
  if (spec.net == NetMode::kHost && !spec.loosening.host_net()) {
    return absl::InvalidArgumentError(
        "--net host shares the host's network namespace: it needs --allow-host-net too");
  }
  if (spec.loosening.host_net() && spec.net != NetMode::kHost && spec.net != NetMode::kNone) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--allow-host-net goes only with --net host, not --net ", NetModeName(spec.net)));
  }
  if (spec.net == NetMode::kEgress && spec.allow.empty()) {
    return absl::InvalidArgumentError("--net egress needs at least one --allow HOST:PORT");
  }
  if (spec.net != NetMode::kEgress && !spec.allow.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--allow applies only to --net egress, not --net ", NetModeName(spec.net)));
  }
  return absl::OkStatus();
}

std::vector<std::string> ExecCandidates(const std::string& command,
                                        const std::vector<std::string>& env) {
  if (absl::StrContains(command, "/")) return {command};
  std::string path = kDefaultPath;
  for (const std::string& entry : env) {
    if (absl::StartsWith(entry, "PATH=")) path = entry.substr(5);
  }
  std::vector<std::string> candidates;
  for (absl::string_view dir : absl::StrSplit(path, ':', absl::SkipEmpty())) {
    if (dir[0] == '/') candidates.push_back(absl::StrCat(dir, "/", command));
  }
  return candidates;
}

}  // namespace

std::vector<std::string> BuildEnvironment(const Spec& spec) {
  std::map<std::string, std::string> values = {
      {"PATH", kDefaultPath}, {"HOME", "/tmp"}, {"HOSTNAME", spec.hostname}};
  std::vector<std::string> order = {"PATH", "HOME", "HOSTNAME"};
  // The image's Env, then -e: later entries win, first appearance keeps its place.
  for (const std::vector<std::string>* layer : {&spec.image_env, &spec.env}) {
    for (const std::string& entry : *layer) {
      size_t eq = entry.find('=');
      if (eq == std::string::npos || eq == 0) continue;
      std::string key = entry.substr(0, eq);
      if (!values.count(key)) order.push_back(key);
      values[key] = entry.substr(eq + 1);
    }
  }
  std::vector<std::string> env;
  for (const std::string& key : order) env.push_back(absl::StrCat(key, "=", values[key]));
  return env;
}

absl::StatusOr<Plan> BuildPlan(const Spec& spec) {
  ZYGO_RETURN_IF_ERROR(CheckSpec(spec));
  ZYGO_RETURN_IF_ERROR(CheckNetwork(spec));
  Plan plan;
  plan.spec = spec;
  // --allow-host-net alone has always meant the host's network.
  if (spec.loosening.host_net() && spec.net == NetMode::kNone) plan.spec.net = NetMode::kHost;
  ZYGO_ASSIGN_OR_RETURN(plan.mounts, BuildMountPlan(plan.spec));
  plan.identity = BuildIdentityPlan(spec.uid, spec.gid);
  const bool runtime_zygote = spec.function_zygotes > 0;
  // A function zygote's /tmp, /dev/shm and /code are mounts made later, as a spare's /tmp.
  plan.landlock = BuildLandlockPlan(ProbeHostFeatures().landlock_abi, plan.mounts.writable_paths,
                                    spec.nested_namespaces > 0 || runtime_zygote);
  plan.seccomp = CompiledSeccompPrograms(runtime_zygote ? SeccompProfile::kRuntimeZygote
                                                        : SeccompProfile::kSandbox);
  plan.rlimits = DefaultRlimits();
  plan.userns_limits = runtime_zygote
                           ? RuntimeUsernsLimits(spec.function_zygotes, spec.nested_namespaces)
                           : DefaultUsernsLimits(spec.nested_namespaces);
  plan.cgroup_limits = {spec.memory_bytes, spec.pids_limit, spec.cpus};
  plan.env = BuildEnvironment(spec);
  plan.exec_candidates = ExecCandidates(spec.argv[0], plan.env);
  if (plan.exec_candidates.empty()) {
    return absl::InvalidArgumentError("the image's PATH names no absolute directory");
  }
  if (plan.exec_candidates.size() > static_cast<size_t>(init::kMaxCandidates)) {
    return absl::InvalidArgumentError(absl::StrCat("PATH lists ", plan.exec_candidates.size(),
                                                   " directories; at most ", init::kMaxCandidates,
                                                   " are searched"));
  }
  plan.namespaces = CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC |
                    CLONE_NEWUTS | CLONE_NEWCGROUP;
  if (plan.spec.net == NetMode::kHost) plan.namespaces &= ~static_cast<uint64_t>(CLONE_NEWNET);
  return plan;
}

}  // namespace zygo::core
