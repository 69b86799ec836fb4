// A Run's event when it does not fit in the Run frame itself: a sealed memfd that rides
// with the Run (SCM_RIGHTS), the supervisor writing it and the agent reading it.
#ifndef ZYGO_AGENTS_WIRE_EVENT_MEMFD_H_
#define ZYGO_AGENTS_WIRE_EVENT_MEMFD_H_

#include <fcntl.h>

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/base/unique_fd.h"

namespace zygo::wire {

// The seals an event memfd carries: its content and size are fixed once it is sent, so
// the agent reads exactly the bytes the Run declared, whatever else holds the fd.
inline constexpr int kEventMemfdSeals = F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE;

// A memfd (MFD_CLOEXEC | MFD_ALLOW_SEALING) holding `content`, sealed with
// kEventMemfdSeals. InvalidArgument when `content` is empty or over kMaxEventBytes
// (messages.h); else the memfd_create/write/fcntl errno. Supervisor side; allocates.
absl::StatusOr<base::UniqueFd> MakeEventMemfd(absl::string_view content);

// The `size` bytes an event memfd holds. InvalidArgument when `size` is 0 or over
// kMaxEventBytes, the fd lacks any of kEventMemfdSeals (it could change while being
// read), or its size is not `size`. Input is untrusted. Agent side; allocates `size`.
absl::StatusOr<std::string> ReadEventMemfd(int fd, uint64_t size);

}  // namespace zygo::wire

#endif  // ZYGO_AGENTS_WIRE_EVENT_MEMFD_H_
