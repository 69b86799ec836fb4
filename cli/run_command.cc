#include "cli/run_command.h"

#include <stdio.h>

#include <chrono>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/image_commands.h"
#include "cli/run_flags.h"
#include "core/cgroup.h"
#include "core/launch.h"
#include "core/outcome.h"
#include "core/plan.h"
#include "core/plan_json.h"

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

// An OCI image runs from its flattened root in the store, with its config applied the
// way docker applies it: Env under -e, WorkingDir unless -w, User unless -u, and
// Entrypoint + (CMD from the command line, else the image's Cmd).
absl::Status ApplyOciImage(RunOptions& options) {
  core::Spec& spec = options.spec;
  absl::StatusOr<images::RunnableImage> image =
      ResolveImageForRun(spec.image, options.pull, options.tls_verify);
  if (!image.ok()) return image.status();
  const images::ImageConfig& config = image->config;
  spec.image_name = spec.image;
  spec.image = "dir:" + image->rootfs;
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

// Writes --outcome if asked; a failure to write is zygo's own failure.
int Report(const RunOptions& options, const core::Outcome& outcome, bool verbose) {
  if (verbose) {
    fprintf(stderr, "timing: plan %.2f ms start %.2f ms run %.2f ms\n", outcome.plan_ms,
            outcome.start_ms, outcome.run_ms);
  }
  if (!outcome.error.empty()) fprintf(stderr, "zygo: %s\n", outcome.error.c_str());
  if (!options.outcome_path.empty()) {
    absl::Status written = core::WriteOutcomeFile(options.outcome_path, outcome);
    if (!written.ok()) return Fail(written);
  }
  return outcome.exit_code;
}

void PrintPlanText(const core::Plan& plan, const char* driver) {
  const core::Spec& spec = plan.spec;
  printf("image      %s\ncommand   ", spec.image.c_str());
  for (const std::string& arg : spec.argv) printf(" %s", arg.c_str());
  printf("\nworkdir    %s\nuser       %u:%u (host %u:%u)\n", spec.workdir.c_str(),
         plan.identity.uid, plan.identity.gid, plan.identity.host_uid, plan.identity.host_gid);
  printf("limits     memory %lld bytes, cpus %.2f, pids %lld, timeout %lld ms (cgroup %s)\n",
         static_cast<long long>(spec.memory_bytes), spec.cpus,
         static_cast<long long>(spec.pids_limit), static_cast<long long>(spec.timeout_ms), driver);
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
  if (!IsBuiltInImage(options.spec.image)) {
    absl::Status applied = ApplyOciImage(options);
    if (!applied.ok()) return Report(options, core::SetupErrorOutcome(applied), false);
  }
  verbose = verbose || options.verbose;
  absl::StatusOr<core::Plan> plan = core::BuildPlan(options.spec);
  double plan_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!plan.ok()) return Report(options, core::SetupErrorOutcome(plan.status(), plan_ms), false);

  absl::StatusOr<std::unique_ptr<core::CgroupDriver>> driver = core::ProbeCgroupDriver();
  core::CgroupDriver* cgroups = driver.ok() ? driver->get() : nullptr;
  if (options.dry_run) {
    const char* name = cgroups != nullptr ? cgroups->name() : "none";
    if (options.json) {
      fputs(core::PlanToJson(*plan, name).c_str(), stdout);
    } else {
      PrintPlanText(*plan, name);
    }
    return 0;
  }
  absl::StatusOr<core::Outcome> outcome = core::Launch(*plan, cgroups);
  if (!outcome.ok())
    return Report(options, core::SetupErrorOutcome(outcome.status(), plan_ms), false);
  outcome->plan_ms = plan_ms;
  return Report(options, *outcome, verbose);
}

}  // namespace zygo::cli
