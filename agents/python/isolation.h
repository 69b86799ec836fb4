// Request isolation inside the sandbox: each spare gets a private temp dir and its own
// Landlock domain (writes only there and to /dev; on ABI >= 6 no signals or abstract unix
// sockets out of the domain), so one request cannot touch a sibling's files, signal or
// ptrace a sibling or the zygote. Complements, never replaces, the sandbox around the zygote.
#ifndef ZYGO_AGENTS_PYTHON_ISOLATION_H_
#define ZYGO_AGENTS_PYTHON_ISOLATION_H_

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace zygo::agents::python {

// "/tmp/zygo-req-<spare id>".
std::string RequestTmpDir(uint64_t spare_id);

// Creates `dir` 0700, empty and new: an existing one is an error (never reuse what
// someone else may have prepared). Child side, before RestrictToRequest.
absl::Status MakeRequestTmpDir(const std::string& dir);

// The kernel's Landlock ABI version, 0 when Landlock is missing or disabled.
int LandlockAbi();

// Stacks a new Landlock domain on the calling process: read and execute everywhere; write
// (create, remove, truncate...) only beneath `tmp_dir`; read/write (no create) of device
// nodes under /dev (/dev/null); on ABI >= 6 also scopes signals and abstract unix sockets
// to the domain. Sets no_new_privs first (landlock_restrict_self requires it without
// CAP_SYS_ADMIN). Returns the ABI applied; 0 means the kernel has no Landlock and nothing
// was restricted. Child side; needs no privileges.
absl::StatusOr<int> RestrictToRequest(const std::string& tmp_dir);

// PR_SET_PDEATHSIG SIGKILL, then checks the zygote `parent` is still the parent (it may
// have died before the prctl): a spare never outlives its zygote. Child side.
absl::Status DieWithParent(pid_t parent);

// Removes `dir` and everything beneath it without following symlinks (openat O_NOFOLLOW
// and unlinkat relative to directory fds), so a request that leaves a symlink behind
// cannot redirect the removal. Zygote side, after the child is reaped.
absl::Status RemoveTree(const std::string& dir);

}  // namespace zygo::agents::python

#endif  // ZYGO_AGENTS_PYTHON_ISOLATION_H_
