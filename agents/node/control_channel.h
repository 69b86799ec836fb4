// The agent's half of the channel to its Node worker (worker.js): a SOCK_STREAM socket,
// each message a 4-byte little-endian length and that many bytes. Node's own modules
// offer no SOCK_SEQPACKET and no fd passing, so the worker reads and writes its end
// synchronously with fs.readSync/writeSync on fd 3 and this framing is all it needs.
#ifndef ZYGO_AGENTS_NODE_CONTROL_CHANNEL_H_
#define ZYGO_AGENTS_NODE_CONTROL_CHANNEL_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/base/unique_fd.h"

namespace zygo::agents::node {

// The largest message either side sends: an event (wire::kMaxEventBytes) and then some.
inline constexpr size_t kMaxControlMessage = (size_t{16} << 20) + 4096;

// Writes one message, all of it (a blocking socket).
absl::Status WriteControlMessage(const base::UniqueFd& fd, absl::string_view bytes);

// Reads one whole message. EOF before its first byte is Unavailable("the worker closed
// its channel"); a length over kMaxControlMessage is InvalidArgument.
absl::StatusOr<std::string> ReadControlMessage(int fd);

}  // namespace zygo::agents::node

#endif  // ZYGO_AGENTS_NODE_CONTROL_CHANNEL_H_
