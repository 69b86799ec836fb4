// Runs the image code's SandboxJobs (bytecode compiles, venv builds) in a real Zygo
// sandbox through core's Plan and Launch. The one images target that depends on core:
// only the `zygo` binary links it, and the image logic itself takes a SandboxRunner.
#ifndef ZYGO_IMAGES_BUILD_SANDBOX_H_
#define ZYGO_IMAGES_BUILD_SANDBOX_H_

#include "absl/status/statusor.h"
#include "images/sandbox_job.h"

namespace zygo::images {

// A SandboxRunner: `job` as a one-shot sandbox (new namespaces, read-only root, seccomp,
// Landlock, loopback-only network, a cgroup with job.memory_bytes, every host CPU, 512
// pids), its output in job.output (when set) so none reaches the caller's terminal.
// Returns its exit code; an error when the sandbox
// could not start, or the job timed out, was OOM-killed or died of a signal. Parent
// side; needs what `zygo run` needs (root, or user namespaces and a delegated cgroup).
absl::StatusOr<int> RunSandboxJob(const SandboxJob& job);

}  // namespace zygo::images

#endif  // ZYGO_IMAGES_BUILD_SANDBOX_H_
