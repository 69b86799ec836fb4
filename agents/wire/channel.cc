// sendmsg/recvmsg of wire frames with SCM_RIGHTS (and SCM_CREDENTIALS on receivers that
// asked for them) over a SOCK_SEQPACKET socketpair.
#include "agents/wire/channel.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"

namespace zygo::wire {
namespace {

constexpr absl::string_view kPeerClosed = "wire: peer closed the agent socket";

// Room for kMaxFdsPerFrame fds and one SCM_CREDENTIALS message (which the kernel puts
// first, net/core/scm.c scm_recv), whether or not the socket asked for credentials: asking
// it per receive cost a getsockopt on every frame. Without credentials that room fits a
// few fds more, so a frame carrying more than kMaxFdsPerFrame is refused after the fact,
// its fds closed, as one that overflowed the room (MSG_CTRUNC) is.
constexpr size_t kRightsSpace = CMSG_SPACE(sizeof(int) * kMaxFdsPerFrame);
constexpr size_t kCredentialsSpace = CMSG_SPACE(sizeof(ucred));
constexpr size_t kControlSize = kCredentialsSpace + kRightsSpace;

// EPIPE/ECONNRESET mean the other end is gone: report them as the one EOF status.
absl::Status SocketErrno(int err, absl::string_view what) {
  if (err == EPIPE || err == ECONNRESET) return absl::UnavailableError(kPeerClosed);
  return base::ErrnoStatus(err, what);
}

// Waits until `fd` is readable or hung up, or `deadline` passes. Polls at least once, so
// a frame already queued is returned even with a zero timeout.
absl::Status WaitReadable(int fd, absl::Time deadline) {
  for (;;) {
    int timeout_ms = -1;
    if (deadline != absl::InfiniteFuture()) {
      const absl::Duration left = std::max(deadline - absl::Now(), absl::ZeroDuration());
      // Round up so a sub-millisecond remainder does not busy-spin with timeout 0.
      const int64_t ms = absl::ToInt64Milliseconds(left + absl::Microseconds(999));
      timeout_ms = static_cast<int>(std::min<int64_t>(ms, INT_MAX));
    }
    pollfd pfd{fd, POLLIN, 0};
    const int ready = ::poll(&pfd, 1, timeout_ms);
    if (ready < 0 && errno != EINTR) {
      return base::ErrnoStatus(errno, absl::StrCat("poll(agent socket ", fd, ", POLLIN)"));
    }
    if (ready > 0) {
      if ((pfd.revents & POLLNVAL) != 0) {
        return absl::InvalidArgumentError(absl::StrCat("poll: fd ", fd, " is not open"));
      }
      return absl::OkStatus();  // POLLIN, POLLHUP or POLLERR: recvmsg tells which.
    }
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError("wire: no frame before the receive deadline");
    }
  }
}

// Moves every fd in the control messages into `received.fds` first, so that whatever is
// wrong with the message afterwards, the fds are owned and get closed; records the
// sender's pid from SCM_CREDENTIALS.
absl::Status TakeControl(msghdr& msg, ReceivedFrame& received) {
  absl::Status status = absl::OkStatus();
  for (cmsghdr* cmsg = CMSG_FIRSTHDR(&msg); cmsg != nullptr; cmsg = CMSG_NXTHDR(&msg, cmsg)) {
    if (cmsg->cmsg_level == SOL_SOCKET && cmsg->cmsg_type == SCM_CREDENTIALS &&
        cmsg->cmsg_len == CMSG_LEN(sizeof(ucred))) {
      ucred credentials{};
      std::memcpy(&credentials, CMSG_DATA(cmsg), sizeof(credentials));
      received.sender_pid = credentials.pid;
      continue;
    }
    if (cmsg->cmsg_level != SOL_SOCKET || cmsg->cmsg_type != SCM_RIGHTS) {
      status = absl::InvalidArgumentError(absl::StrCat(
          "wire: unexpected control message level ", cmsg->cmsg_level, " type ", cmsg->cmsg_type));
      continue;
    }
    const size_t count = (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    const unsigned char* data = CMSG_DATA(cmsg);
    for (size_t i = 0; i < count; ++i) {
      int fd = -1;
      std::memcpy(&fd, data + i * sizeof(int), sizeof(int));
      received.fds.emplace_back(fd);
    }
  }
  return status;
}

}  // namespace

absl::StatusOr<std::pair<base::UniqueFd, base::UniqueFd>> MakeAgentSocketPair() {
  int sv[2] = {-1, -1};
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    return base::ErrnoStatus(errno, "socketpair(AF_UNIX, SOCK_SEQPACKET|SOCK_CLOEXEC)");
  }
  return std::make_pair(base::UniqueFd(sv[0]), base::UniqueFd(sv[1]));
}

absl::Status EnablePeerCredentials(int fd) {
  const int on = 1;
  if (::setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)) != 0) {
    return base::ErrnoStatus(errno, absl::StrCat("setsockopt(agent socket ", fd, ", SO_PASSCRED)"));
  }
  return absl::OkStatus();
}

absl::Status SendFrame(int fd, const Frame& frame, absl::Span<const int> fds) {
  for (int attached : fds) {
    if (attached < 0) {
      return absl::InvalidArgumentError(absl::StrCat("wire: cannot attach fd ", attached));
    }
  }
  ZYGO_ASSIGN_OR_RETURN(std::string bytes, EncodeFrame(frame, fds.size()));

  iovec iov{bytes.data(), bytes.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) unsigned char control[kRightsSpace] = {};
  if (!fds.empty()) {
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(cmsg), fds.data(), sizeof(int) * fds.size());
  }
  for (;;) {
    const ssize_t sent = ::sendmsg(fd, &msg, MSG_NOSIGNAL);
    if (sent < 0) {
      if (errno == EINTR) continue;
      return SocketErrno(
          errno, absl::StrCat("sendmsg(agent socket ", fd, ", ", MessageTypeName(frame.type), ", ",
                              bytes.size(), " bytes, ", fds.size(), " fds)"));
    }
    // SOCK_SEQPACKET sends a datagram whole or not at all.
    if (static_cast<size_t>(sent) != bytes.size()) {
      return absl::InternalError(
          absl::StrCat("sendmsg sent ", sent, " of ", bytes.size(), " bytes of a datagram"));
    }
    return absl::OkStatus();
  }
}

absl::StatusOr<ReceivedFrame> ReceiveFrame(int fd, absl::Duration timeout) {
  // No clock read for the zero timeout: the zygote receives that way between forks, and
  // absl's clock writes to a page every fork has just shared with a child.
  const absl::Time deadline = timeout == absl::InfiniteDuration() ? absl::InfiniteFuture()
                              : timeout == absl::ZeroDuration()   ? absl::InfinitePast()
                                                                  : absl::Now() + timeout;
  // One spare byte beyond the largest legal frame: a datagram that fills it is oversized.
  // Per thread and never zeroed: 128 KiB allocated and cleared per frame was measurable on
  // the supervisor's request path.
  thread_local const std::unique_ptr<char[]> buffer(new char[kMaxFrameSize + 1]);
  // A zero timeout is a caller that has just polled: straight to recvmsg, no second poll.
  // Waiting forever needs no poll either: a blocking recvmsg is the wait, one syscall a
  // frame. (A socket someone made non-blocking answers EAGAIN and is then polled.)
  const bool block = timeout == absl::InfiniteDuration();
  bool wait = !block && timeout != absl::ZeroDuration();
  for (;;) {
    if (wait) ZYGO_RETURN_IF_ERROR(WaitReadable(fd, deadline));
    wait = true;
    iovec iov{buffer.get(), kMaxFrameSize + 1};
    alignas(cmsghdr) unsigned char control[kControlSize] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = kControlSize;
    // MSG_DONTWAIT after a poll: it said readable, but another reader may have taken the
    // datagram.
    const ssize_t n = ::recvmsg(fd, &msg, MSG_CMSG_CLOEXEC | (block ? 0 : MSG_DONTWAIT));
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return SocketErrno(errno, absl::StrCat("recvmsg(agent socket ", fd, ")"));
    }
    ReceivedFrame received;
    const absl::Status cmsg_status = TakeControl(msg, received);
    // On SOCK_SEQPACKET a 0-byte read is the peer's EOF. Frames are never empty, so an
    // empty datagram from a live peer is treated as a hang-up too (any fds with it close).
    if (n == 0) return absl::UnavailableError(kPeerClosed);
    if ((msg.msg_flags & MSG_CTRUNC) != 0 || received.fds.size() > kMaxFdsPerFrame) {
      return absl::InvalidArgumentError(absl::StrCat("wire: control data truncated (more than ",
                                                     kMaxFdsPerFrame, " fds attached?)"));
    }
    ZYGO_RETURN_IF_ERROR(cmsg_status);
    if ((msg.msg_flags & MSG_TRUNC) != 0 || static_cast<size_t>(n) > kMaxFrameSize) {
      return absl::InvalidArgumentError(
          absl::StrCat("wire: datagram truncated; frames are at most ", kMaxFrameSize, " bytes"));
    }
    const absl::string_view bytes(buffer.get(), static_cast<size_t>(n));
    ZYGO_ASSIGN_OR_RETURN(FrameHeader header, DecodeHeader(bytes));
    if (header.fd_count() != received.fds.size()) {
      return absl::InvalidArgumentError(absl::StrCat("wire: ", MessageTypeName(header.type),
                                                     " frame declares ", header.fd_count(),
                                                     " fds but carries ", received.fds.size()));
    }
    received.frame.type = header.type;
    received.frame.request_id = header.request_id;
    received.frame.payload = std::string(bytes.substr(kHeaderSize));
    return received;
  }
}

bool IsPeerClosed(const absl::Status& status) {
  return status.code() == absl::StatusCode::kUnavailable && status.message() == kPeerClosed;
}

}  // namespace zygo::wire
