// Sockets in another network namespace, opened from a short-lived thread.
//
// TODO(issue 4): the raw setns/socket/bind calls belong in core/base/sys/ (STYLE.md E.14,
// the netlink family); they live here until that file exists, since this change may touch
// net/ only.
#include "net/netns_socket.h"

#include <errno.h>
#include <linux/netlink.h>
#include <sched.h>
#include <sys/socket.h>

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

std::string Describe(const ThreadResult& result, int netns_fd, absl::string_view what) {
  return absl::StrCat(result.step, " for ", what, " in netns fd ", netns_fd);
}

}  // namespace

absl::StatusOr<base::UniqueFd> OpenSocketInNetns(int netns_fd, int domain, int type, int protocol) {
  const ThreadResult result = CreateOnThread(netns_fd, domain, type, protocol);
  if (result.fd < 0) {
    return base::ErrnoStatus(
        result.err, Describe(result, netns_fd,
                             absl::StrCat("socket(", domain, ", ", type, ", ", protocol, ")")));
  }
  return base::UniqueFd(result.fd);
}

absl::StatusOr<base::UniqueFd> OpenNetlinkInNetns(int netns_fd) {
  const ThreadResult result = CreateOnThread(netns_fd, AF_NETLINK, SOCK_RAW, NETLINK_NETFILTER);
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
