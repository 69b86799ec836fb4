// Opens sockets that live in another network namespace, without moving the caller: a
// short-lived thread joins the namespace, creates the socket and exits. A socket keeps the
// namespace it was created in for its whole life, whichever thread or process uses it.
#ifndef ZYGO_NET_NETNS_SOCKET_H_
#define ZYGO_NET_NETNS_SOCKET_H_

#include "absl/status/statusor.h"
#include "core/base/unique_fd.h"

namespace zygo::net {

// socket(domain, type | SOCK_CLOEXEC, protocol) inside the network namespace `netns_fd`
// (an open /proc/PID/ns/net or a bind mount of one; borrowed, not closed).
//
// Parent side (supervisor), never between fork and exec. As root: a std::thread calls
// setns(netns_fd, CLONE_NEWNET) — that moves only the calling thread (setns(2)) — and ends
// right after, so no other thread of the caller ever changes namespace. That needs
// CAP_SYS_ADMIN both in the user namespace that owns the target netns and in the caller's
// own (netns_install() checks both). Rootless, when that is refused: a forked child joins
// the owning user namespace first (its owner holds every capability there), then the
// netns, and passes the socket back over SCM_RIGHTS. Any other caller gets EPERM.
absl::StatusOr<base::UniqueFd> OpenSocketInNetns(int netns_fd, int domain, int type, int protocol);

// A NETLINK_NETFILTER socket in the network namespace `netns_fd`, bound (auto port id), for
// the firewall functions in net/firewall.h. Same caller and capability rules as above.
// EPROTONOSUPPORT ("nftables is not available") when the kernel lacks nfnetlink.
absl::StatusOr<base::UniqueFd> OpenNetlinkInNetns(int netns_fd);

}  // namespace zygo::net

#endif  // ZYGO_NET_NETNS_SOCKET_H_
