#include "images/build_sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <algorithm>
#include <memory>

#include "absl/strings/str_cat.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "core/base/unique_fd.h"
#include "core/cgroup.h"
#include "core/launch.h"
#include "core/outcome.h"
#include "core/plan.h"
#include "core/spec.h"

namespace zygo::images {
namespace {

core::Spec SpecFor(const SandboxJob& job) {
  core::Spec spec;
  spec.root = core::RootFs::Directory(job.rootfs);
  spec.image_name = job.rootfs;
  spec.argv = job.argv;
  spec.image_env = job.image_env;
  spec.env = job.env;
  for (const JobMount& mount : job.mounts) {
    spec.volumes.push_back({mount.host, mount.sandbox, mount.read_only});
  }
  spec.memory_bytes = job.memory_bytes;
  // compileall -j0 and pip's wheel builds use every CPU they see; the cgroup should let them.
  spec.cpus = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
  spec.pids_limit = 512;
  spec.timeout_ms = job.timeout_ms;
  spec.tmp_size_bytes = 256LL << 20;
  spec.loosening = job.loosening;
  if (!job.allow.empty()) {
    spec.net = core::NetMode::kEgress;
    spec.allow = job.allow;
  }
  return spec;
}

absl::StatusOr<core::Outcome> LaunchWithoutNetwork(const core::Spec& spec,
                                                   core::CgroupDriver* cgroups,
                                                   const core::LaunchOptions& options) {
  ZYGO_ASSIGN_OR_RETURN(core::Plan plan, core::BuildPlan(spec));
  return core::Launch(plan, cgroups, options);
}

}  // namespace

absl::StatusOr<int> RunSandboxJob(const SandboxJob& job) {
  if (!job.allow.empty()) {
    return absl::FailedPreconditionError(
        "a sandbox job with a network allowlist needs a runner that attaches its network");
  }
  return RunSandboxJobWith(job, LaunchWithoutNetwork);
}

absl::StatusOr<int> RunSandboxJobWith(const SandboxJob& job, const JobLauncher& launch) {
  const core::Spec spec = SpecFor(job);
  absl::StatusOr<std::unique_ptr<core::CgroupDriver>> driver = core::ProbeCgroupDriver();
  // The job's stdio goes to its log through the launch itself, never by swapping this
  // process's fds 0-2: the supervisor builds for several functions at once, and its own
  // log is on them.
  core::LaunchOptions options;
  base::UniqueFd output, null;
  if (!job.output.empty()) {
    output.Reset(::open(job.output.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (!output.valid()) return base::ErrnoStatus(errno, absl::StrCat("open(", job.output, ")"));
    null.Reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (!null.valid()) return base::ErrnoStatus(errno, "open(/dev/null)");
    options.stdio_fds[0] = null.get();
    options.stdio_fds[1] = output.get();
    options.stdio_fds[2] = output.get();
  }
  absl::StatusOr<core::Outcome> launched =
      launch(spec, driver.ok() ? driver->get() : nullptr, options);
  ZYGO_ASSIGN_OR_RETURN(core::Outcome outcome, std::move(launched));
  switch (outcome.status) {
    case core::OutcomeStatus::kOk:
    case core::OutcomeStatus::kNonzeroExit:
      return outcome.exit_code;
    case core::OutcomeStatus::kTimeout:
      return absl::DeadlineExceededError(
          absl::StrCat("timed out after ", job.timeout_ms / 1000, " s"));
    case core::OutcomeStatus::kOom:
      return absl::ResourceExhaustedError(
          absl::StrCat("killed by the OOM killer at ", job.memory_bytes >> 20, " MiB"));
    case core::OutcomeStatus::kSignaled:
      return absl::AbortedError(absl::StrCat("killed by signal ", outcome.signal));
    default:
      return absl::InternalError(outcome.error.empty()
                                     ? std::string(core::OutcomeStatusName(outcome.status))
                                     : outcome.error);
  }
}

}  // namespace zygo::images
