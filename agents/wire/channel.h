// Sends and receives wire frames over a SOCK_SEQPACKET unix socketpair, with fds attached
// via SCM_RIGHTS and, where the receiver asks for them, the sender's SCM_CREDENTIALS.
//
// Why SOCK_SEQPACKET: (1) it keeps message boundaries, so one frame is one datagram and a
// reader never sees half a frame or has to reassemble a stream; (2) like every AF_UNIX type
// it carries SCM_RIGHTS, and the fds are tied to exactly that datagram (on SOCK_STREAM they
// attach to a byte range and can arrive with an unrelated read); (3) it is connection-
// oriented, so when the peer dies every pending recv returns 0 (EOF) instead of blocking
// forever, which SOCK_DGRAM socketpairs do not promise. Oversized frames are detected via
// MSG_TRUNC rather than being split.
#ifndef ZYGO_AGENTS_WIRE_CHANNEL_H_
#define ZYGO_AGENTS_WIRE_CHANNEL_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "agents/wire/frame.h"
#include "core/base/unique_fd.h"

namespace zygo::wire {

// Creates a connected AF_UNIX SOCK_SEQPACKET pair, both ends O_CLOEXEC. By convention
// `first` stays with the supervisor and `second` is handed to the agent (which must clear
// CLOEXEC on it, or dup2 it, before exec). Parent side; needs nothing.
absl::StatusOr<std::pair<base::UniqueFd, base::UniqueFd>> MakeAgentSocketPair();

// Turns on SO_PASSCRED for `fd`: from then on every datagram received on it names its
// sender's pid (ReceivedFrame::sender_pid), attached by the kernel without the sender's
// help. The supervisor does this on its end of the zygote channel, so a Forked frame
// proves which process sent it. Either side; needs nothing.
absl::Status EnablePeerCredentials(int fd);

// Sends `frame` as one datagram with `fds` attached (at most kMaxFdsPerFrame; the header
// declares how many). The fds stay owned by the caller. Blocks until the socket has room;
// EPIPE comes back as a status (MSG_NOSIGNAL), never as SIGPIPE. Either side; allocates, so
// not for use between fork and exec.
absl::Status SendFrame(int fd, const Frame& frame, absl::Span<const int> fds);

// Receives one frame, waiting at most `timeout` (absl::InfiniteDuration() waits forever).
// The received fds are O_CLOEXEC (MSG_CMSG_CLOEXEC) and owned by the result; on every error
// path they are closed before returning. sender_pid is filled when `fd` has SO_PASSCRED.
// Errors:
//   - kUnavailable: the peer closed its end (EOF); nothing else uses this code. See
//     IsPeerClosed().
//   - kDeadlineExceeded: nothing arrived within `timeout`.
//   - kInvalidArgument / kFailedPrecondition: a malformed frame (bad magic, version, type,
//     flags, length), a truncated datagram or control message (MSG_TRUNC / MSG_CTRUNC), or
//     fds that differ from the number the header declares.
//   - others: the recvmsg/poll errno.
// The datagram is consumed even when it is refused, so the next call sees the next frame.
absl::StatusOr<ReceivedFrame> ReceiveFrame(int fd, absl::Duration timeout);

// True for ReceiveFrame's end-of-stream status.
bool IsPeerClosed(const absl::Status& status);

}  // namespace zygo::wire

#endif  // ZYGO_AGENTS_WIRE_CHANNEL_H_
