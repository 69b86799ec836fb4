#include "cli/run_command.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/image_commands.h"
#include "cli/run_flags.h"
#include "core/base/helper_binary.h"
#include "core/cgroup.h"
#include "core/launch.h"
#include "core/outcome.h"
#include "core/plan.h"
#include "core/plan_json.h"
#include "images/build_sandbox.h"
#include "images/bytecode_layer.h"
#include "images/venv_cache.h"
#include "net/network_helper.h"
#include "net/sandbox_network_plan.h"

namespace zygo::cli {
namespace {

int Fail(const absl::Status& status) {
  // An empty message means a helper (zygo-image) already said what went wrong.
  if (!status.message().empty()) {
    fprintf(stderr, "zygo: %s\n", std::string(status.message()).c_str());
  }
  return 125;
}

bool IsBuiltInImage(const std::string& image) {
  return image == "host" || image.rfind("dir:", 0) == 0;
}

// The image's bytecode root (images/bytecode_layer.h), built on first use, unless
// ZYGO_BYTECODE=0. A failed build is one warning line, and the image's own root.
std::string ChooseRoot(images::Store& store, const images::RunnableImage& image,
                       const RunOptions& options, bool verbose) {
  const char* wanted = getenv("ZYGO_BYTECODE");
  if (wanted != nullptr && strcmp(wanted, "0") == 0) return image.rootfs;
  absl::StatusOr<std::optional<images::BytecodeRoot>> root =
      images::EnsureBytecodeRoot(store, image, images::RunSandboxJob, options.spec.allow_unlimited);
  if (!root.ok()) {
    std::string why(root.status().message());
    std::replace(why.begin(), why.end(), '\n', ' ');
    fprintf(stderr, "zygo: warning: no bytecode layer for %s (%s); running it without\n",
            image.reference.c_str(), why.c_str());
    return image.rootfs;
  }
  if (!root->has_value()) return image.rootfs;
  if (verbose && (*root)->built) {
    fprintf(stderr, "zygo: built %s: %lld .pyc files, %.1f MB, in %.0f ms\n",
            (*root)->reference.c_str(), static_cast<long long>((*root)->pyc_files),
            (*root)->pyc_bytes / 1e6, (*root)->build_ms);
  }
  return (*root)->rootfs;
}

// --requirements: the cached venv (images/venv_cache.h), read-only at /venv and first
// on PATH; -e still overrides.
absl::Status ApplyVenv(images::Store& store, const images::RunnableImage& image,
                       const std::string& rootfs, RunOptions& options, bool verbose) {
  core::Spec& spec = options.spec;
  images::VenvRequest request{options.requirements, options.find_links, spec.allow_unlimited,
                              spec.allow_host_net};
  absl::StatusOr<images::Venv> venv =
      images::EnsureVenv(store, image, rootfs, request, images::RunSandboxJob);
  if (!venv.ok()) return venv.status();
  if (verbose) {
    fprintf(stderr, "zygo: venv %s %s\n", venv->key.substr(0, 19).c_str(),
            venv->built ? absl::StrFormat("built in %.0f ms", venv->build_ms).c_str() : "reused");
  }
  spec.volumes.push_back({venv->path, images::kVenvMountpoint, /*read_only=*/true});
  std::vector<std::string> env = images::VenvEnvironment(image.config.env);
  spec.env.insert(spec.env.begin(), env.begin(), env.end());
  return absl::OkStatus();
}

// An OCI image runs from its flattened root in the store (or its bytecode root), with
// its config applied the way docker applies it: Env under -e, WorkingDir unless -w,
// User unless -u, and Entrypoint + (CMD from the command line, else the image's Cmd).
absl::Status ApplyOciImage(RunOptions& options, bool verbose) {
  core::Spec& spec = options.spec;
  absl::StatusOr<images::RunnableImage> image =
      ResolveImageForRun(spec.image, options.pull, options.tls_verify);
  if (!image.ok()) return image.status();
  absl::StatusOr<images::Store> store = images::Store::Open(images::Store::DefaultRoot());
  if (!store.ok()) return store.status();
  std::string rootfs = ChooseRoot(*store, *image, options, verbose);
  if (!options.requirements.empty()) {
    absl::Status venv = ApplyVenv(*store, *image, rootfs, options, verbose);
    if (!venv.ok()) return venv;
  }
  const images::ImageConfig& config = image->config;
  spec.image_name = spec.image;
  spec.image = "dir:" + rootfs;
  spec.image_env = config.env;
  if (!options.workdir_set && !config.working_dir.empty()) spec.workdir = config.working_dir;
  if (!options.user_set && !config.user.empty()) {
    absl::StatusOr<images::NumericUser> user = images::ResolveImageUser(image->rootfs, config.user);
    if (!user.ok()) return user.status();
    spec.uid = user->uid;
    spec.gid = user->gid;
  }
  std::vector<std::string> argv = config.entrypoint;
  const std::vector<std::string>& rest = spec.argv.empty() ? config.cmd : spec.argv;
  argv.insert(argv.end(), rest.begin(), rest.end());
  if (argv.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "image ", spec.image_name, " has no Entrypoint or Cmd: give a command to run"));
  }
  spec.argv = std::move(argv);
  return absl::OkStatus();
}

// --explain-denials: one line naming every refused call, with how many times.
void PrintDenials(const core::Outcome& outcome) {
  if (outcome.seccomp_denials.empty()) {
    fprintf(stderr, "zygo: seccomp refused no call\n");
    return;
  }
  std::string line;
  for (const core::Outcome::SeccompDenial& denial : outcome.seccomp_denials) {
    absl::StrAppend(&line, line.empty() ? "" : ", ", denial.name, " x", denial.count);
  }
  fprintf(stderr, "zygo: seccomp refused (EPERM): %s\n", line.c_str());
}

// Writes --outcome if asked; a failure to write is zygo's own failure.
int Report(const RunOptions& options, const core::Outcome& outcome, bool verbose) {
  if (verbose) {
    fprintf(stderr, "timing: plan %.2f ms start %.2f ms run %.2f ms\n", outcome.plan_ms,
            outcome.start_ms, outcome.run_ms);
  }
  if (!outcome.error.empty()) fprintf(stderr, "zygo: %s\n", outcome.error.c_str());
  if (outcome.seccomp_kill.has_value()) {
    const core::Outcome::SeccompKill& kill = *outcome.seccomp_kill;
    fprintf(stderr,
            "zygo: %s killed: it called %s (%s), which the sandbox's seccomp filter refuses\n",
            kill.command ? "the command was" : "a process of the sandbox was", kill.name.c_str(),
            kill.arch.c_str());
  }
  if (outcome.denials_explained) PrintDenials(outcome);
  if (!options.outcome_path.empty()) {
    absl::Status written = core::WriteOutcomeFile(options.outcome_path, outcome);
    if (!written.ok()) return Fail(written);
  }
  return outcome.exit_code;
}

// What a run would use for its limits: the driver and where its cgroups would go, or why
// none can be made. Reads only: the placement is not carried out.
core::CgroupChoice DescribeCgroups(
    const absl::StatusOr<std::unique_ptr<core::CgroupDriver>>& driver) {
  if (!driver.ok()) return {"none", "none", std::string(driver.status().message())};
  const core::CgroupPlacement& placement = (*driver)->placement();
  return {(*driver)->name(), core::CgroupPlacementName(placement.kind), placement.detail};
}

void PrintPlanText(const core::Plan& plan, const core::CgroupChoice& cgroup) {
  const core::Spec& spec = plan.spec;
  printf("image      %s\ncommand   ", spec.image.c_str());
  for (const std::string& arg : spec.argv) printf(" %s", arg.c_str());
  printf("\nworkdir    %s\nuser       %u:%u (host %u:%u)\n", spec.workdir.c_str(),
         plan.identity.uid, plan.identity.gid, plan.identity.host_uid, plan.identity.host_gid);
  printf("limits     memory %lld bytes, cpus %.2f, pids %lld, timeout %lld ms (cgroup %s)\n",
         static_cast<long long>(spec.memory_bytes), spec.cpus,
         static_cast<long long>(spec.pids_limit), static_cast<long long>(spec.timeout_ms),
         cgroup.driver.c_str());
  printf("cgroup     %s: %s\n", cgroup.placement.c_str(), cgroup.detail.c_str());
  printf("mounts     %zu steps (use --json to list them)\n", plan.mounts.ops.size());
  printf("seccomp    %d syscalls allowed, the rest EPERM\nlandlock   ABI %d, %zu rules\n",
         plan.seccomp.allowed_syscalls, plan.landlock.abi, plan.landlock.rules.size());
}

// --net egress/full: checked here, before any clone. nullopt for the other modes.
// ZYGO_PASTA and ZYGO_DNS_UPSTREAM point at a test's pasta and fake DNS server.
absl::StatusOr<std::optional<net::SandboxNetworkPlan>> PlanNetwork(const core::Spec& spec) {
  if (spec.net != core::NetMode::kEgress && spec.net != core::NetMode::kFull) {
    return std::optional<net::SandboxNetworkPlan>();
  }
  net::SandboxNetworkRequest request;
  request.mode = spec.net == core::NetMode::kEgress ? net::SandboxNetMode::kEgress
                                                    : net::SandboxNetMode::kFull;
  request.allow = spec.allow;
  if (const char* pasta = getenv("ZYGO_PASTA"); pasta != nullptr && *pasta != '\0') {
    request.pasta_path = pasta;
  }
  if (const char* dns = getenv("ZYGO_DNS_UPSTREAM"); dns != nullptr) request.dns_upstream = dns;
  absl::StatusOr<net::SandboxNetworkPlan> plan = net::PlanSandboxNetwork(request);
  if (!plan.ok()) return plan.status();
  return std::optional<net::SandboxNetworkPlan>(*std::move(plan));
}

// Launches the plan; with a network plan, hooks the network up before the child goes and
// stops pasta and the resolver once the sandbox has ended, however it ended.
absl::StatusOr<core::Outcome> LaunchWithNetwork(
    const core::Plan& plan, core::CgroupDriver* cgroups,
    const std::optional<net::SandboxNetworkPlan>& network_plan) {
  if (!network_plan.has_value()) return core::Launch(plan, cgroups);
  absl::StatusOr<std::string> helper =
      base::FindHelperBinary("zygo-net", "net", "the network helper for --net egress/full");
  if (!helper.ok()) return helper.status();
  std::unique_ptr<net::NetworkHelper> network;
  absl::StatusOr<core::Outcome> outcome =
      core::Launch(plan, cgroups, [&](pid_t pid) -> absl::Status {
        absl::StatusOr<std::unique_ptr<net::NetworkHelper>> started =
            net::NetworkHelper::Start(*helper, pid, *network_plan);
        if (!started.ok()) return started.status();
        network = *std::move(started);
        return absl::OkStatus();
      });
  if (network) network->Stop();
  return outcome;
}

}  // namespace

int RunCommand(int argc, char** argv, bool verbose) {
  auto start = std::chrono::steady_clock::now();
  absl::StatusOr<RunOptions> parsed = ParseRunFlags(argc, argv);
  if (!parsed.ok()) return Fail(parsed.status());
  RunOptions& options = *parsed;
  if (options.help) {
    fputs(RunUsage(), stdout);
    return 0;
  }
  if (!IsBuiltInImage(options.spec.image)) {
    absl::Status applied = ApplyOciImage(options, verbose || options.verbose);
    if (!applied.ok()) return Report(options, core::SetupErrorOutcome(applied), false);
  }
  verbose = verbose || options.verbose;
  absl::StatusOr<core::Plan> plan = core::BuildPlan(options.spec);
  double plan_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!plan.ok()) return Report(options, core::SetupErrorOutcome(plan.status(), plan_ms), false);
  absl::StatusOr<std::optional<net::SandboxNetworkPlan>> network_plan = PlanNetwork(plan->spec);
  if (!network_plan.ok()) {
    return Report(options, core::SetupErrorOutcome(network_plan.status(), plan_ms), false);
  }

  absl::StatusOr<std::unique_ptr<core::CgroupDriver>> driver =
      core::ProbeCgroupDriver({.purpose = "zygo run"});
  core::CgroupDriver* cgroups = driver.ok() ? driver->get() : nullptr;
  if (options.dry_run) {
    const core::CgroupChoice choice = DescribeCgroups(driver);
    if (options.json) {
      fputs(core::PlanToJson(*plan, choice).c_str(), stdout);
    } else {
      PrintPlanText(*plan, choice);
    }
    return 0;
  }
  if (!driver.ok() && !plan->spec.allow_unlimited) {
    return Report(
        options, core::SetupErrorOutcome(core::CannotApplyLimits(driver.status()), plan_ms), false);
  }
  absl::StatusOr<core::Outcome> outcome = LaunchWithNetwork(*plan, cgroups, *network_plan);
  if (!outcome.ok())
    return Report(options, core::SetupErrorOutcome(outcome.status(), plan_ms), false);
  outcome->plan_ms = plan_ms;
  return Report(options, *outcome, verbose);
}

}  // namespace zygo::cli
