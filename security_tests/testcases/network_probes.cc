// Escape probe subcommands (escape_probe.cc): the network.
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "security_tests/testcases/escape_probes.h"
#include "security_tests/testcases/probe_support.h"

namespace zygo::security_tests {
namespace {

// ---------------------------------------------------------------------------------------------
// Network.

// Allowed if any interface besides "lo" exists; denied ENODEV otherwise. Host: allowed.
Outcome ProbeInterfaces(const Args&) {
  struct if_nameindex* list = if_nameindex();
  if (list == nullptr) return DeniedAt("if_nameindex", errno);
  bool other = false;
  for (struct if_nameindex* i = list; i->if_index != 0; ++i) {
    Info("iface=" + std::string(i->if_name) + " index=" + std::to_string(i->if_index));
    if (strcmp(i->if_name, "lo") != 0) other = true;
  }
  if_freenameindex(list);
  return other ? Allowed() : Denied(ENODEV);
}

// Fills `addr` from a numeric IPv4/IPv6 literal (no DNS: the probe tests connect, not resolv).
bool ParseAddress(const std::string& host, long port, sockaddr_storage* addr, socklen_t* len) {
  auto* v4 = reinterpret_cast<sockaddr_in*>(addr);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(addr);
  if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<uint16_t>(port));
    *len = sizeof *v4;
    return true;
  }
  if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<uint16_t>(port));
    *len = sizeof *v6;
    return true;
  }
  return false;
}

// Finishes a non-blocking connect within 1 s: ETIMEDOUT if nothing answered.
Outcome AwaitConnect(int fd) {
  pollfd pfd = {fd, POLLOUT, 0};
  int ready;
  while ((ready = poll(&pfd, 1, 1000)) < 0 && errno == EINTR) {
  }
  if (ready < 0) return DeniedAt("poll", errno);
  if (ready == 0) return Denied(ETIMEDOUT);
  int err = 0;
  socklen_t len = sizeof err;
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) return Denied(errno);
  return err == 0 ? Allowed() : Denied(err);
}

// Needs a listener from the harness. Host control: allowed with one, ECONNREFUSED without.
Outcome ProbeConnectTcp(const Args& args) {
  long port;
  sockaddr_storage addr{};
  socklen_t len = 0;
  if (!ParseLong(args[1], 1, 65535, &port) || !ParseAddress(args[0], port, &addr, &len)) {
    return BadUsage();
  }
  int fd = socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return DeniedAt("socket", errno);
  Outcome out = Allowed();
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    out = errno == EINPROGRESS ? AwaitConnect(fd) : Denied(errno);
  }
  close(fd);
  return out;
}

// Abstract unix sockets belong to the network namespace. Needs a SOCK_STREAM listener on
// "\0NAME" from the harness. Host control: allowed with one, ECONNREFUSED without.
Outcome ProbeConnectAbstract(const Args& args) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string& name = args[0];
  if (name.empty() || name.size() > sizeof addr.sun_path - 1) return BadUsage();
  memcpy(addr.sun_path + 1, name.data(), name.size());
  socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return DeniedAt("socket", errno);
  Outcome out = FromRet(connect(fd, reinterpret_cast<sockaddr*>(&addr), len));
  close(fd);
  return out;
}

// Allowed if a cgroup filesystem is mounted anywhere visible or /sys/fs/cgroup is cgroup2.
Outcome ProbeCgroupVisible(const Args&) {
  bool visible = false;
  struct statfs fs {};
  if (statfs("/sys/fs/cgroup", &fs) == 0) {
    char hex[32];
    snprintf(hex, sizeof hex, "0x%lx", static_cast<unsigned long>(fs.f_type));
    Info(std::string("sys-fs-cgroup f_type=") + hex);
    visible = fs.f_type == CGROUP2_SUPER_MAGIC || fs.f_type == CGROUP_SUPER_MAGIC;
  } else {
    Info("sys-fs-cgroup " + ErrnoName(errno));
  }
  std::string mountinfo;
  ReadWholeFile("/proc/self/mountinfo", &mountinfo);
  for (size_t start = 0, end; start < mountinfo.size(); start = end + 1) {
    end = std::min(mountinfo.find('\n', start), mountinfo.size());
    std::string line = mountinfo.substr(start, end - start);
    size_t dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::string fstype = line.substr(dash + 3, line.find(' ', dash + 3) - dash - 3);
    if (fstype != "cgroup" && fstype != "cgroup2") continue;
    Info("mount " + line);
    visible = true;
  }
  return visible ? Allowed() : Denied(ENOENT);
}

constexpr ProbeSpec kProbes[] = {
    {"interfaces", "", 0, 0, "any network interface besides lo", ProbeInterfaces},
    {"connect-tcp", "HOST PORT", 2, 2, "TCP connect to a numeric HOST, 1 s timeout",
     ProbeConnectTcp},
    {"connect-abstract", "NAME", 1, 1, "connect to abstract unix socket @NAME",
     ProbeConnectAbstract},
    {"cgroup-visible", "", 0, 0, "any cgroup filesystem visible", ProbeCgroupVisible},
};

}  // namespace

std::span<const ProbeSpec> NetworkProbes() { return kProbes; }

}  // namespace zygo::security_tests
