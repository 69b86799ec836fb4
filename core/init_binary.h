// zygo-init (core/init/init_main.cc), the program a sandbox's pid 1 becomes once its
// setup is done, carried inside every binary that launches sandboxes. Parent side.
#ifndef ZYGO_CORE_INIT_BINARY_H_
#define ZYGO_CORE_INIT_BINARY_H_

#include "absl/status/statusor.h"

namespace zygo::core {

// A CLOEXEC memfd holding zygo-init, made once per process and kept for its life: sealed
// against every change, and mode 0111, so it can be executed but not read. A process
// exec'd from a file it cannot read is non-dumpable from its first instruction
// (fs/exec.c, would_dump), so nothing in the sandbox can read its memory, environment
// or fds through /proc/1. The error names the host setting when the kernel refuses
// executable memfds (vm.memfd_noexec = 2).
absl::StatusOr<int> InitBinaryFd();

}  // namespace zygo::core

#endif  // ZYGO_CORE_INIT_BINARY_H_
