// The zygote tree's choices: who forks from a runtime zygote, its sandbox and key, and the
// forked zygote's seal.
#include "supervisor/function_tree.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "core/forked_zygote.h"
#include "core/seccomp_policy.h"
#include "core/userns_limits.h"

namespace zygo::supervisor {
namespace {

// The runtime zygote's own cgroup: an interpreter with its standard library, and the
// function zygotes it forks, each until the supervisor moves it into its function's.
constexpr int64_t kRuntimeMemoryBytes = 512LL << 20;
constexpr int64_t kRuntimePids = 64;
// How many function zygotes one runtime zygote may hold at once: its user namespace
// counts every one's namespaces and inotify instances (core::RuntimeUsernsLimits).
constexpr int kRuntimeFunctionZygotes = 1024;

// Environment the interpreter reads at its start, or the preloaded modules at import (the
// locale, time zone and home), which a forked zygote could no longer change.
bool ReadAtStart(const std::string& key) {
  return absl::StartsWith(key, "PYTHON") || absl::StartsWith(key, "LD_") ||
         absl::StartsWith(key, "ZYGO_") || absl::StartsWith(key, "LC_") || key == "PATH" ||
         key == "VIRTUAL_ENV" || key == "HOME" || key == "LANG" || key == "LANGUAGE" || key == "TZ";
}

std::string KeyOf(const std::string& entry) { return entry.substr(0, entry.find('=')); }

}  // namespace

const std::vector<std::string>& RuntimePreload() {
  static const auto* const kModules = new std::vector<std::string>{
      "base64",    "collections",  "contextlib",     "copy",      "csv",     "dataclasses",
      "datetime",  "decimal",      "enum",           "functools", "hashlib", "io",
      "itertools", "json",         "logging",        "math",      "pathlib", "random",
      "re",        "ssl",          "statistics",     "string",    "struct",  "time",
      "typing",    "urllib.parse", "urllib.request", "uuid"};
  return *kModules;
}

std::string WhyNotInTree(const FunctionSpec& function) {
  if (function.runtime != Runtime::kPython) return "its runtime forks no interpreter";
  if (function.net != core::NetMode::kNone) {
    return "its network is set up per sandbox (net.mode other than none)";
  }
  return "";
}

core::Spec RuntimeSandboxSpec(const core::Spec& function_sandbox, const FunctionSpec& function,
                              const std::string& empty_dir, const std::string& agent_path,
                              int nested_namespaces) {
  core::Spec runtime = function_sandbox;
  runtime.volumes.clear();
  for (const core::VolumeSpec& volume : function_sandbox.volumes) {
    if (volume.destination != "/code") runtime.volumes.push_back(volume);
  }
  runtime.volumes.push_back({empty_dir, "/code", /*read_only=*/true});
  // The function's own [env] goes to its zygote in Seal, except what is read at start.
  runtime.env.clear();
  for (const std::string& entry : function_sandbox.env) {
    const bool the_functions = std::any_of(
        function.env.begin(), function.env.end(),
        [&](const auto& pair) { return entry == absl::StrCat(pair.first, "=", pair.second); });
    if (!the_functions || ReadAtStart(KeyOf(entry))) runtime.env.push_back(entry);
  }
  runtime.argv = {agent_path,  "--fd",      "3",
                  "--runtime", "--preload", absl::StrJoin(RuntimePreload(), ",")};
  runtime.workdir = "/";
  runtime.memory_bytes = kRuntimeMemoryBytes;
  runtime.pids_limit = kRuntimePids;
  runtime.cpus = 1.0;
  runtime.timeout_ms = 0;
  runtime.function_zygotes = kRuntimeFunctionZygotes;
  runtime.nested_namespaces = nested_namespaces;
  runtime.net = core::NetMode::kNone;
  runtime.allow.clear();
  return runtime;
}

std::string RuntimeKey(const core::Spec& runtime) {
  std::vector<std::string> parts = {runtime.root.Describe(),
                                    absl::StrJoin(runtime.image_env, "\n"),
                                    absl::StrJoin(runtime.env, "\n"),
                                    absl::StrJoin(runtime.argv, " "),
                                    absl::StrCat(runtime.uid, ":", runtime.gid),
                                    runtime.hostname,
                                    absl::StrCat(runtime.tmp_size_bytes)};
  for (const core::VolumeSpec& volume : runtime.volumes) {
    parts.push_back(
        absl::StrCat(volume.source, ":", volume.destination, volume.read_only ? ":ro" : ":rw"));
  }
  return absl::StrJoin(parts, "\x1f");
}

absl::StatusOr<ForkedZygoteSpec> ForkedSpecFor(const FunctionSpec& function, const core::Plan& plan,
                                               int nested_namespaces) {
  const core::Spec& spec = plan.spec;
  ForkedZygoteSpec forked;
  // As the launch binds it: where it resolved at `zygo up`, or refused.
  char resolved[PATH_MAX];
  if (::realpath(function.code.c_str(), resolved) == nullptr) {
    return base::ErrnoStatus(errno, absl::StrCat("its code directory ", function.code));
  }
  if (function.code != resolved) {
    return absl::FailedPreconditionError(absl::StrCat("its code directory ", function.code,
                                                      " now resolves to ", resolved, "; refused"));
  }
  struct stat st;
  if (::stat(resolved, &st) != 0)
    return base::ErrnoStatus(errno, absl::StrCat("stat(", resolved, ")"));
  forked.namespaces.code_dir = resolved;
  forked.namespaces.code_dev = st.st_dev;
  forked.namespaces.code_ino = st.st_ino;
  forked.namespaces.tmp_bytes = spec.tmp_size_bytes;
  forked.namespaces.shm_bytes = spec.tmp_size_bytes;
  forked.namespaces.gid = spec.gid;
  forked.namespaces.userns_limits = core::DefaultUsernsLimits(nested_namespaces);
  forked.seal.env = plan.env;
  forked.seal.workdir = spec.workdir;
  forked.seal.code_dir = "/code";
  forked.seal.entry = function.pool ? "" : function.entry;
  forked.seal.preload = function.preload;
  ZYGO_ASSIGN_OR_RETURN(std::vector<struct sock_filter> filter,
                        core::BuildFunctionZygoteSealFilter());
  forked.seal.seccomp_filter = core::SeccompProgramBytes(filter);
  return forked;
}

}  // namespace zygo::supervisor
