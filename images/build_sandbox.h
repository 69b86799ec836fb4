// Runs the image code's SandboxJobs (bytecode compiles, venv builds) in a real Zygo
// sandbox through core's Plan and Launch. The one images target that depends on core:
// only the `zygo` binary links it, and the image logic itself takes a SandboxRunner.
#ifndef ZYGO_IMAGES_BUILD_SANDBOX_H_
#define ZYGO_IMAGES_BUILD_SANDBOX_H_

#include <functional>

#include "absl/status/statusor.h"
#include "core/cgroup.h"
#include "core/launch.h"
#include "core/outcome.h"
#include "core/spec.h"
#include "images/sandbox_job.h"

namespace zygo::images {

// Launches a job once it is a core::Spec (its net and allow set from job.allow) with
// `options` (the job's stdio) and returns how it ended. RunSandboxJob's own is core's
// BuildPlan and Launch, which attach no network; runtime passes one that plans and
// attaches the egress network (runtime::PlanSandbox and LaunchSandbox), which images may
// not depend on.
using JobLauncher = std::function<absl::StatusOr<core::Outcome>(
    const core::Spec& spec, core::CgroupDriver* cgroups, const core::LaunchOptions& options)>;

// A SandboxRunner: `job` as a one-shot sandbox (new namespaces, read-only root, seccomp,
// Landlock, loopback-only network, a cgroup with job.memory_bytes, every host CPU, 512
// pids), its output in job.output (when set) so none reaches the caller's terminal.
// Returns its exit code; an error when the sandbox
// could not start, or the job timed out, was OOM-killed or died of a signal. Parent
// side; needs what `zygo run` needs (root, or user namespaces and a delegated cgroup).
// A job with `allow` is refused (FailedPrecondition): it needs RunSandboxJobWith.
absl::StatusOr<int> RunSandboxJob(const SandboxJob& job);

// RunSandboxJob with `launch` starting the sandbox: the same spec, stdio and outcome
// mapping, and for a job with `allow` the spec's net is egress with that allowlist.
absl::StatusOr<int> RunSandboxJobWith(const SandboxJob& job, const JobLauncher& launch);

}  // namespace zygo::images

#endif  // ZYGO_IMAGES_BUILD_SANDBOX_H_
