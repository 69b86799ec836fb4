// Test-only network namespaces and probes: a holder process per namespace (the namespace
// dies with it, and it dies with the test), commands such as `ip` run inside one, and TCP
// and UDP attempts made from sockets that live in one. Needs root (CAP_SYS_ADMIN).
#ifndef ZYGO_NET_INTERNAL_TEST_NETNS_H_
#define ZYGO_NET_INTERNAL_TEST_NETNS_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/base/unique_fd.h"

namespace zygo::net::testing {

// A fresh network namespace, held by a child that did unshare(CLONE_NEWNET). The child
// exits when this object is destroyed or when the test process dies (it waits for EOF on a
// pipe and has PR_SET_PDEATHSIG), and the namespace goes with it once no socket of ours
// still refers to it. Nothing is mounted under /run/netns.
class TestNetns {
 public:
  static absl::StatusOr<std::unique_ptr<TestNetns>> Create();
  ~TestNetns();
  TestNetns(const TestNetns&) = delete;
  TestNetns& operator=(const TestNetns&) = delete;

  pid_t pid() const { return pid_; }
  int fd() const { return ns_fd_.get(); }  // /proc/<pid>/ns/net

  // Runs `argv` (argv[0] is looked up in /usr/sbin, /sbin, /usr/bin, /bin) inside the
  // namespace and returns its stdout and stderr together; an error when it does not exit 0.
  absl::StatusOr<std::string> Run(const std::vector<std::string>& argv) const;

 private:
  TestNetns(pid_t pid, base::UniqueFd stay, base::UniqueFd ns_fd)
      : pid_(pid), stay_(std::move(stay)), ns_fd_(std::move(ns_fd)) {}

  pid_t pid_;
  base::UniqueFd stay_;  // write end; closing it lets the holder exit
  base::UniqueFd ns_fd_;
};

// What a connection attempt came to.
enum class ConnectResult {
  kConnected,
  kRefused,  // an RST came back (ECONNREFUSED): the packet got through
  kDropped,  // no answer within the timeout, or EPERM from a local netfilter drop
  kError,    // anything else (no route, ...); see `err`
};

struct ConnectOutcome {
  ConnectResult result = ConnectResult::kError;
  int err = 0;
  std::string ToString() const;
};

// Non-blocking TCP connect to `address`:`port` from a socket in `netns_fd`, waiting at most
// `timeout_ms` (a dropped SYN gets no RST, so "no answer" means dropped).
ConnectOutcome TryConnect(int netns_fd, absl::string_view address, uint16_t port,
                          int timeout_ms = 300);

// A TCP listener (backlog 128, never accepting) on `address`:`port` inside `netns_fd`.
absl::StatusOr<base::UniqueFd> Listen(int netns_fd, absl::string_view address, uint16_t port);

// A UDP socket bound to `address`:`port` inside `netns_fd`.
absl::StatusOr<base::UniqueFd> BindUdp(int netns_fd, absl::string_view address, uint16_t port);

// Sends one datagram from a socket in `netns_fd`; returns 0 or the errno of sendto
// (EPERM when the local firewall dropped it).
int SendUdp(int netns_fd, absl::string_view address, uint16_t port);

// Sends one ICMP echo request (raw socket) to IPv4 `address` from `netns_fd`; returns 0 or
// the errno of sendto (EPERM when the local firewall dropped it).
int SendIcmpEcho(int netns_fd, absl::string_view address);

// Whether a datagram arrives on `fd` within `timeout_ms`.
bool ReceivedUdp(int fd, int timeout_ms = 300);

}  // namespace zygo::net::testing

#endif  // ZYGO_NET_INTERNAL_TEST_NETNS_H_
