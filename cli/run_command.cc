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
#include "cli/run_flags.h"
#include "core/cgroup.h"
#include "core/outcome.h"
#include "core/plan.h"
#include "core/plan_json.h"
#include "images/package_list.h"
#include "runtime/sandbox_recipe.h"

namespace zygo::cli {
namespace {

int Fail(const absl::Status& status) {
  // An empty message means a helper (zygo-image) already said what went wrong.
  if (!status.message().empty()) {
    fprintf(stderr, "zygo: %s\n", std::string(status.message()).c_str());
  }
  return 125;
}

// The image into the spec through runtime's recipe, with the CLI's flags: -w and -u win
// over the image's WorkingDir and User, --pull, --system and --requirements as given.
absl::Status UseRunImage(RunOptions& options, bool verbose) {
  runtime::ImageOptions image;
  image.pull = {options.pull, options.tls_verify, " and --pull=never was given"};
  image.caller = {options.workdir_set, options.user_set, /*command_is_the_images=*/true};
  image.bytecode = true;
  absl::StatusOr<std::vector<std::string>> system = images::CanonicalPackageList(options.system);
  if (!system.ok()) return system.status();
  image.system = *std::move(system);
  image.network = runtime::NetworkHostFromEnvironment();
  image.venv = {options.requirements, options.find_links};
  image.verbose = verbose;
  return runtime::UseImage(options.image, image, options.spec);
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
  printf("image      %s\ncommand   ", spec.ImageLabel().c_str());
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
  verbose = verbose || options.verbose;
  absl::Status image = UseRunImage(options, verbose);
  if (!image.ok()) return Report(options, core::SetupErrorOutcome(image), false);
  absl::StatusOr<runtime::Sandbox> sandbox =
      runtime::PlanSandbox(options.spec, runtime::NetworkHostFromEnvironment());
  double plan_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!sandbox.ok()) {
    return Report(options, core::SetupErrorOutcome(sandbox.status(), plan_ms), false);
  }
  const core::Plan& plan = sandbox->plan;

  absl::StatusOr<std::unique_ptr<core::CgroupDriver>> driver =
      core::ProbeCgroupDriver({.purpose = "zygo run"});
  core::CgroupDriver* cgroups = driver.ok() ? driver->get() : nullptr;
  if (options.dry_run) {
    const core::CgroupChoice choice = DescribeCgroups(driver);
    if (options.json) {
      fputs(core::PlanToJson(plan, choice).c_str(), stdout);
    } else {
      PrintPlanText(plan, choice);
    }
    return 0;
  }
  if (!driver.ok() && !plan.spec.loosening.unlimited()) {
    return Report(
        options, core::SetupErrorOutcome(core::CannotApplyLimits(driver.status()), plan_ms), false);
  }
  absl::StatusOr<core::Outcome> outcome = runtime::LaunchSandbox(*sandbox, cgroups);
  if (!outcome.ok())
    return Report(options, core::SetupErrorOutcome(outcome.status(), plan_ms), false);
  outcome->plan_ms = plan_ms;
  return Report(options, *outcome, verbose);
}

}  // namespace zygo::cli
