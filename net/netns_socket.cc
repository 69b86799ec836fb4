// Sockets in another network namespace, opened from a short-lived thread.
//
// TODO(issue 4): the raw setns/socket/bind calls belong in core/base/sys/ (STYLE.md E.14,
// the netlink family); they live here until that file exists, since this change may touch
// net/ only.
#include "net/netns_socket.h"

#include <errno.h>
#include <linux/netlink.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/base/errno_status.h"

namespace zygo::net {
namespace {

// What the helper thread did: the socket, or the step that failed and its errno.
struct ThreadResult {
  int fd = -1;
  const char* step = nullptr;
  int err = 0;
};

ThreadResult CreateInNetns(int netns_fd, int domain, int type, int protocol) {
  ThreadResult result;
  // Only this thread changes namespace, and it exits right after; the process's other
  // threads and its later threads keep theirs (setns(2): "the calling thread").
  if (setns(netns_fd, CLONE_NEWNET) != 0) {
    result.err = errno;
    result.step = "setns(CLONE_NEWNET)";
    return result;
  }
  const int fd = socket(domain, type | SOCK_CLOEXEC, protocol);
  if (fd < 0) {
    result.err = errno;
    result.step = "socket";
    return result;
  }
  result.fd = fd;
  return result;
}

// Runs CreateInNetns on a thread of its own. A std::thread (not a forked child) because the
// socket must come back as an fd of this process; join() orders the thread's writes to
// `result` before our read.
ThreadResult CreateOnThread(int netns_fd, int domain, int type, int protocol) {
  ThreadResult result;
  std::thread worker([&result, netns_fd, domain, type, protocol] {
    result = CreateInNetns(netns_fd, domain, type, protocol);
  });
  worker.join();
  return result;
}

// Rootless: setns(CLONE_NEWNET) on a thread failed with EPERM because netns_install() also
// wants CAP_SYS_ADMIN in the caller's own user namespace. The owner of the namespace's user
// namespace holds every capability inside it, so a forked child (single-threaded, as
// setns(CLONE_NEWUSER) requires) joins that user namespace first, then the network
// namespace, creates the socket and passes it back over SCM_RIGHTS. The socket's file then
// carries the child's credentials, which had CAP_NET_ADMIN there: what nfnetlink checks.
ThreadResult CreateInOwningUserns(int netns_fd, int domain, int type, int protocol) {
  ThreadResult result;
  base::UniqueFd userns(ioctl(netns_fd, NS_GET_USERNS));
  if (!userns.valid()) {
    result.err = errno;
    result.step = "ioctl(NS_GET_USERNS)";
    return result;
  }
  int channel[2];
  if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, channel) != 0) {
    result.err = errno;
    result.step = "socketpair";
    return result;
  }
  base::UniqueFd ours(channel[0]);
  base::UniqueFd theirs(channel[1]);
  const pid_t child = fork();
  if (child < 0) {
    result.err = errno;
    result.step = "fork";
    return result;
  }
  if (child == 0) {
    // Async-signal-safe only: the caller may have other threads.
    ThreadResult made;
    if (setns(userns.get(), CLONE_NEWUSER) != 0) {
      made.err = errno;
      made.step = "setns(CLONE_NEWUSER)";
    } else {
      made = CreateInNetns(netns_fd, domain, type, protocol);
    }
    int err = made.fd < 0 ? made.err : 0;
    const char* step = made.step;  // a string literal: the same address in the parent
    struct iovec payload[2] = {{&err, sizeof(err)}, {&step, sizeof(step)}};
    alignas(struct cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    struct msghdr message = {};
    message.msg_iov = payload;
    message.msg_iovlen = 2;
    if (made.fd >= 0) {
      message.msg_control = control;
      message.msg_controllen = sizeof(control);
      struct cmsghdr* header = CMSG_FIRSTHDR(&message);
      header->cmsg_level = SOL_SOCKET;
      header->cmsg_type = SCM_RIGHTS;
      header->cmsg_len = CMSG_LEN(sizeof(int));
      memcpy(CMSG_DATA(header), &made.fd, sizeof(int));
    }
    _exit(sendmsg(theirs.get(), &message, 0) < 0 ? 1 : 0);
  }
  theirs.Reset();
  int err = 0;
  const char* step = nullptr;
  struct iovec payload[2] = {{&err, sizeof(err)}, {&step, sizeof(step)}};
  alignas(struct cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  struct msghdr message = {};
  message.msg_iov = payload;
  message.msg_iovlen = 2;
  message.msg_control = control;
  message.msg_controllen = sizeof(control);
  ssize_t got = base::RetryOnEintr([&] { return recvmsg(ours.get(), &message, MSG_CMSG_CLOEXEC); });
  const int recv_errno = errno;
  int status = 0;
  base::RetryOnEintr([&] { return waitpid(child, &status, 0); });
  if (got != static_cast<ssize_t>(sizeof(err) + sizeof(step))) {
    result.err = got < 0 ? recv_errno : EPROTO;
    result.step = "recvmsg(socket from the user-namespace child)";
    return result;
  }
  struct cmsghdr* header = CMSG_FIRSTHDR(&message);
  if (err == 0 && header != nullptr && header->cmsg_type == SCM_RIGHTS) {
    memcpy(&result.fd, CMSG_DATA(header), sizeof(int));
    return result;
  }
  result.err = err == 0 ? EPROTO : err;
  result.step = step != nullptr ? step : "socket from the user-namespace child";
  return result;
}

// The thread way first (root); the owning user namespace's way when that is refused.
ThreadResult Create(int netns_fd, int domain, int type, int protocol) {
  ThreadResult result = CreateOnThread(netns_fd, domain, type, protocol);
  if (result.fd < 0 && result.err == EPERM && geteuid() != 0) {
    return CreateInOwningUserns(netns_fd, domain, type, protocol);
  }
  return result;
}

std::string Describe(const ThreadResult& result, int netns_fd, absl::string_view what) {
  return absl::StrCat(result.step, " for ", what, " in netns fd ", netns_fd);
}

}  // namespace

absl::StatusOr<base::UniqueFd> OpenSocketInNetns(int netns_fd, int domain, int type, int protocol) {
  const ThreadResult result = Create(netns_fd, domain, type, protocol);
  if (result.fd < 0) {
    return base::ErrnoStatus(
        result.err, Describe(result, netns_fd,
                             absl::StrCat("socket(", domain, ", ", type, ", ", protocol, ")")));
  }
  return base::UniqueFd(result.fd);
}

absl::StatusOr<base::UniqueFd> OpenNetlinkInNetns(int netns_fd) {
  const ThreadResult result = Create(netns_fd, AF_NETLINK, SOCK_RAW, NETLINK_NETFILTER);
  if (result.fd < 0) {
    absl::Status status = base::ErrnoStatus(
        result.err, Describe(result, netns_fd, "socket(AF_NETLINK, NETLINK_NETFILTER)"));
    if (result.err == EPROTONOSUPPORT) {
      return absl::UnimplementedError(absl::StrCat(
          "nftables is not available: the kernel has no nfnetlink (", status.message(), ")"));
    }
    return status;
  }
  base::UniqueFd fd(result.fd);
  // Bind with port id 0 (the kernel picks one) so replies can be matched to a known port
  // id; bind needs no namespace change.
  sockaddr_nl address = {};
  address.nl_family = AF_NETLINK;
  if (bind(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    return base::ErrnoStatus(errno, "bind(NETLINK_NETFILTER socket)");
  }
  return fd;
}

}  // namespace zygo::net
