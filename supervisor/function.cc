// A function's zygote lifecycle: warm on demand, re-warm after death, drop when idle.
#include "supervisor/function.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "core/loosening.h"
#include "images/run_image.h"
#include "runtime/python_image.h"
#include "runtime/sandbox_recipe.h"
#include "supervisor/code_policy.h"
#include "supervisor/function_tree.h"
#include "supervisor/image_program.h"
#include "supervisor/log.h"

namespace zygo::supervisor {
namespace {

// Where the agent binary appears inside every function's sandbox.
constexpr char kAgentPath[] = "/.zygo-agent";

// The mountpoints a function's sandbox binds over: /code and the agent. A host root gets
// them on its tmpfs; an image's flattened root (ours, in the store) gets them made once.
absl::Status EnsureMountpoints(const std::string& rootfs) {
  const std::string code = absl::StrCat(rootfs, "/code");
  if (mkdir(code.c_str(), 0755) != 0 && errno != EEXIST) {
    return base::ErrnoStatus(errno, absl::StrCat("mkdir(", code, ")"));
  }
  const std::string agent = absl::StrCat(rootfs, kAgentPath);
  int fd = open(agent.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0755);
  if (fd < 0 && errno != EEXIST) return base::ErrnoStatus(errno, absl::StrCat("open(", agent, ")"));
  if (fd >= 0) close(fd);
  return absl::OkStatus();
}

// The image through runtime's recipe, as `zygo run` takes it: an OCI image's Env,
// WorkingDir (else /code) and User, and for an exec function its Entrypoint before the
// command. Pulled as the spec's `pull` says (missing: only when not in the store), its
// progress a line at a time to `on_progress`, over plain HTTP from a loopback registry or
// one of `insecure_registries`; its system packages built with `network` reaching the
// image's apt mirrors.
absl::Status UseFunctionImage(const FunctionSpec& function,
                              std::function<void(const std::string&)> on_progress,
                              const runtime::NetworkHost& network,
                              const std::vector<std::string>& insecure_registries,
                              core::Spec* sandbox) {
  runtime::ImageOptions options;
  const images::TlsVerify tls =
      function.image.oci()
          ? images::TlsVerifyFor(function.image.reference.registry, insecure_registries)
          : images::TlsVerify::kDefault;
  options.pull = {function.pull, tls,
                  absl::StrCat(": run `zygo pull ", function.image.text,
                               "` first (the spec says pull = \"never\")"),
                  std::move(on_progress)};
  options.caller.command_is_the_images = function.runtime == Runtime::kExec;
  options.bytecode = true;  // as zygo run: a Python image's stdlib already compiled
  options.system = function.system;
  options.network = network;
  options.venv = {function.requirements, function.find_links};
  absl::Status used = runtime::UseImage(function.image, options, *sandbox);
  if (!used.ok()) {
    // Missing from the store is still FailedPrecondition here: the function exists, so a
    // caller must not read NotFound as "no such function".
    const absl::StatusCode code =
        absl::IsNotFound(used) ? absl::StatusCode::kFailedPrecondition : used.code();
    const std::string why = used.message().empty()
                                ? absl::StrCat("cannot pull ", function.image.text)
                                : std::string(used.message());
    absl::Status failed(code, absl::StrCat(function.origin, ": ", why));
    if (runtime::IsBuildFailure(used)) runtime::MarkBuildFailure(failed);
    return failed;
  }
  if (function.image.oci()) ZYGO_RETURN_IF_ERROR(EnsureMountpoints(sandbox->root.directory));
  return absl::OkStatus();
}

// The agent binary each runtime's zygote runs, as the host found it.
const std::string& AgentOf(Runtime runtime, const FunctionHost& host) {
  switch (runtime) {
    case Runtime::kPython:
      return host.python_agent;
    case Runtime::kNode:
      return host.node_agent;
    case Runtime::kExec:
      break;
  }
  return host.exec_agent;
}

// A node function's node, where the sandbox would find it: the first `node` on its PATH,
// in the image's root (the host image: the host's /usr as the sandbox shows it). None is
// the one-line refusal `zygo up` prints; nothing is started.
absl::StatusOr<std::string> FindNode(const FunctionSpec& function, const core::Spec& sandbox) {
  absl::StatusOr<std::string> node =
      FindProgramInRoot(ViewOf(sandbox.root), SandboxPath(sandbox), "node");
  if (node.ok()) return node;
  const std::string why = absl::StrCat(function.origin, ": runtime \"node\": the image ",
                                       sandbox.ImageLabel(), " has ", node.status().message());
  if (absl::IsNotFound(node.status())) return absl::FailedPreconditionError(why);
  return absl::Status(node.status().code(), why);
}

// The agent's command line: python and node take the handler (or --pool) from /code; an
// exec function's command goes after "--".
absl::StatusOr<std::vector<std::string>> AgentArgv(const FunctionSpec& spec,
                                                   const core::Spec& sandbox,
                                                   const std::vector<std::string>& command) {
  std::vector<std::string> argv = {kAgentPath, "--fd", "3"};
  if (spec.runtime == Runtime::kExec) {
    argv.push_back("--");
    argv.insert(argv.end(), command.begin(), command.end());
    return argv;
  }
  argv.insert(argv.end(), {"--code-dir", "/code"});
  if (spec.pool) {
    argv.push_back("--pool");
  } else {
    argv.insert(argv.end(), {"--entry", spec.entry});
  }
  if (!spec.preload.empty())
    argv.insert(argv.end(), {"--preload", absl::StrJoin(spec.preload, ",")});
  if (spec.runtime == Runtime::kNode) {
    // Found once here, so the agent does not search again (and cannot find another).
    ZYGO_ASSIGN_OR_RETURN(std::string node, FindNode(spec, sandbox));
    argv.insert(argv.end(), {"--node", node});
  }
  return argv;
}

}  // namespace

Function::Function(FunctionSpec spec, const FunctionHost* host)
    : spec_(std::move(spec)), host_(host), last_used_(std::chrono::steady_clock::now()) {}

Function::~Function() { Stop(); }

FunctionInfo Function::Info() const {
  FunctionInfo info = ToFunctionInfo(spec_);
  info.requests = requests_.load();
  info.warm_ups = warm_ups_.load();
  std::lock_guard<std::mutex> lock(mu_);
  info.error = last_error_;
  info.progress = progress_;
  info.warm_ms = warm_ms_;
  info.forked = forked_;
  if (zygote_ && zygote_->alive()) {
    info.state = FunctionState::kWarm;
  } else if (warming_.load()) {
    info.state = FunctionState::kWarming;
  } else {
    info.state = FunctionState::kCold;
  }
  return info;
}

absl::StatusOr<ZygoteConfig> Function::BuildZygoteConfig() {
  core::Spec sandbox = ToSandboxSpec(spec_);
  ZygoteConfig config;
  const auto on_progress = [this](const std::string& line) {
    Log(LogLevel::kInfo, absl::StrCat(spec_.name, ": ", line));
    std::lock_guard<std::mutex> lock(mu_);
    progress_ = line;
  };
  runtime::NetworkHost network{host_->network_helper, host_->pasta_path, host_->dns_upstream};
  ZYGO_RETURN_IF_ERROR(
      UseFunctionImage(spec_, on_progress, network, host_->insecure_registries, &sandbox));
  const bool python = spec_.runtime == Runtime::kPython;
  const std::string& agent = AgentOf(spec_.runtime, *host_);
  if (agent.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the ", RuntimeName(spec_.runtime), " agent binary was not found next to the supervisor"));
  }
  // exec: the command, after the image's Entrypoint.
  ZYGO_ASSIGN_OR_RETURN(sandbox.argv, AgentArgv(spec_, sandbox, sandbox.argv));
  sandbox.volumes.push_back({agent, kAgentPath, /*read_only=*/true});
  sandbox.timeout_ms = spec_.timeout_ms;  // unused: the zygote has no deadline of its own
  if (host_->allow_unlimited) core::LooseningGrant::AllowUnlimited(sandbox.loosening);
  // The function's cgroup holds the zygote, its spares and every request in flight; each
  // request also has its own cgroup inside with the spec's limits.
  const int64_t slots = 1 + spec_.spares + host_->max_concurrency;
  sandbox.memory_bytes = spec_.memory_bytes * slots;
  sandbox.pids_limit = spec_.pids_limit * slots;
  // One user namespace per live spare (its own /tmp); a dead one's is freed a moment
  // after it is reaped, so twice as many and some to spare.
  sandbox.nested_namespaces = static_cast<int>(2 * slots + 16);
  sandbox.cpus = std::max(spec_.cpus, 1.0) * 2;
  ZYGO_ASSIGN_OR_RETURN(config.sandbox, runtime::PlanSandbox(sandbox, network));
  if (python && host_->runtimes != nullptr) {
    ZYGO_RETURN_IF_ERROR(UseRuntimeZygote(sandbox, sandbox.nested_namespaces, config));
  }
  config.cgroups = host_->cgroups;
  config.request_limits = {spec_.memory_bytes, spec_.pids_limit, spec_.cpus};
  config.spares = spec_.spares;
  // Only a python child runs the handler in the memory it was forked with; a node spare's
  // worker is a process of its own, as an exec function's command is.
  config.learn_prefault = python;
  config.name = spec_.name;
  return config;
}

absl::Status Function::UseRuntimeZygote(const core::Spec& sandbox, int nested_namespaces,
                                        ZygoteConfig& config) {
  if (!WhyNotInTree(spec_).empty()) return absl::OkStatus();
  // The most any function's zygote may make: its spares' namespaces at the most spares.
  const int most_nested = 2 * (1 + kMaxSpares + host_->max_concurrency) + 16;
  const core::Spec runtime_spec =
      RuntimeSandboxSpec(sandbox, spec_, host_->empty_dir, kAgentPath, most_nested);
  const auto make = [&]() -> absl::StatusOr<RuntimeZygoteConfig> {
    RuntimeZygoteConfig runtime;
    ZYGO_ASSIGN_OR_RETURN(runtime.sandbox, runtime::PlanSandbox(runtime_spec, {}));
    runtime.cgroups = host_->cgroups;
    runtime.limits = runtime.sandbox.plan.cgroup_limits;
    runtime.name = absl::StrCat("runtime ", sandbox.ImageLabel());
    return runtime;
  };
  ZYGO_ASSIGN_OR_RETURN(config.runtime, host_->runtimes->Get(RuntimeKey(runtime_spec), make));
  ZYGO_ASSIGN_OR_RETURN(config.forked,
                        ForkedSpecFor(spec_, config.sandbox.plan, nested_namespaces));
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<Zygote>> Function::WarmZygote() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (zygote_ && zygote_->alive()) return zygote_;
  }
  std::lock_guard<std::mutex> warm_lock(warm_mu_);
  std::shared_ptr<Zygote> old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (zygote_ && zygote_->alive()) return zygote_;
    old = std::move(zygote_);  // dead: its last users finish with their own reference
    // The same venv from the same files fails the same way: not rebuilt per request.
    if (!build_failure_.ok()) return build_failure_;
  }
  warming_.store(true);
  {
    std::lock_guard<std::mutex> lock(mu_);
    progress_.clear();
  }
  absl::StatusOr<ZygoteConfig> config = BuildZygoteConfig();
  absl::StatusOr<std::unique_ptr<Zygote>> started =
      config.ok() ? Zygote::Start(*std::move(config)) : config.status();
  std::lock_guard<std::mutex> lock(mu_);
  warming_.store(false);
  if (!started.ok()) {
    last_error_ = std::string(started.status().message());
    if (runtime::IsBuildFailure(started.status())) {
      build_failure_ =
          absl::Status(started.status().code(),
                       absl::StrCat(started.status().message(),
                                    " (remembered: `zygo up` the spec again to retry the build)"));
    }
    return started.status();
  }
  last_error_.clear();
  warm_ups_.fetch_add(1);
  zygote_ = std::shared_ptr<Zygote>(*std::move(started));
  last_used_ = std::chrono::steady_clock::now();
  warm_ms_ = absl::ToDoubleMilliseconds(zygote_->warm_time());
  forked_ = zygote_->forked();
  const std::string breakdown = zygote_->start_breakdown();
  Log(LogLevel::kInfo,
      absl::StrFormat(
          "%s is warm (%.1f ms%s%s)", spec_.name, warm_ms_,
          forked_ ? ", forked from its runtime zygote" : "",
          breakdown.empty() ? "" : absl::StrCat(": ", breakdown, ", then its imports")));
  return zygote_;
}

absl::Status Function::Warm() { return WarmZygote().status(); }

void Function::Run(ExecRequest&& request, std::string&& code, const CancelSignal& cancel,
                   const std::function<void(ExecReply)>& deliver) {
  in_flight_.fetch_add(1);
  requests_.fetch_add(1);
  absl::StatusOr<std::shared_ptr<Zygote>> zygote = WarmZygote();
  if (!zygote.ok()) {
    ExecReply reply;
    reply.status = zygote.status();
    in_flight_.fetch_sub(1);
    deliver(std::move(reply));
    return;
  }
  SpareRequest spare_request;
  spare_request.request_id = next_request_id_.fetch_add(1);
  spare_request.entry = spec_.pool ? std::move(request.script_digest) : spec_.entry;
  spare_request.code = std::move(code);
  spare_request.event = request.event_json.empty() ? "null" : std::move(request.event_json);
  spare_request.stdin_data = std::move(request.stdin_data);
  spare_request.timeout_ms = spec_.timeout_ms;
  (*zygote)->Run(spare_request, cancel, [&](ExecReply reply) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      last_used_ = std::chrono::steady_clock::now();
    }
    deliver(std::move(reply));
  });
  in_flight_.fetch_sub(1);
}

bool Function::DropIfIdle() {
  if (spec_.cold_after_ms <= 0 || in_flight_.load() > 0) return false;
  std::shared_ptr<Zygote> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!zygote_) return false;
    auto idle = std::chrono::steady_clock::now() - last_used_;
    if (idle < std::chrono::milliseconds(spec_.cold_after_ms) && zygote_->alive()) return false;
    dropped = std::move(zygote_);
  }
  dropped->Stop();
  return true;
}

void Function::Stop() {
  std::shared_ptr<Zygote> stopped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped = std::move(zygote_);
  }
  if (stopped) stopped->Stop();
}

}  // namespace zygo::supervisor
