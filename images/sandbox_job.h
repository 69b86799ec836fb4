// A job that image code runs inside a sandbox of an image's own root (compiling its
// bytecode, building a venv, fetching and unpacking system packages), described with core's plain
// types only: the caller passes a SandboxRunner, normally RunSandboxJob (images/build_sandbox.h,
// core's Plan and Launch).
#ifndef ZYGO_IMAGES_SANDBOX_JOB_H_
#define ZYGO_IMAGES_SANDBOX_JOB_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/spec.h"

namespace zygo::images {

struct JobMount {
  std::string host;     // an existing host directory
  std::string sandbox;  // where it appears; must exist as a directory in `rootfs`
  bool read_only = true;
};

struct SandboxJob {
  std::string rootfs;                  // a flattened root in the store
  std::vector<std::string> argv;       // argv[0] looked up on the image's PATH
  std::vector<std::string> image_env;  // the image config's Env
  std::vector<std::string> env;        // KEY=VALUE over the image's
  std::vector<JobMount> mounts;
  // Host file that gets the job's stdout and stderr (created or truncated); its stdin is
  // /dev/null. Empty: all three are the caller's.
  std::string output;
  int64_t timeout_ms = 600'000;  // generous: a slow disk must not fail a build
  int64_t memory_bytes = 1LL << 30;
  core::Loosening loosening;  // as the user's own run allows (pip from an index: host net)
  // Non-empty: the job's network is egress to these "HOST:PORT" names only (a
  // system-package build reaching the image's apt mirrors), which only a runner that
  // attaches networks can give (runtime's); empty: loopback only.
  std::vector<std::string> allow;
};

// Runs `job` to completion and returns its exit code. An error means it could not be
// started, or did not exit by itself (timeout, OOM kill, signal). Parent side.
using SandboxRunner = std::function<absl::StatusOr<int>(const SandboxJob& job)>;

}  // namespace zygo::images

#endif  // ZYGO_IMAGES_SANDBOX_JOB_H_
