// Test network namespaces held by child processes, and probes run from inside them.
#include "net/internal/test_netns.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "net/ip_address.h"
#include "net/netns_socket.h"

namespace zygo::net::testing {
namespace {

absl::StatusOr<std::string> FindProgram(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  for (const char* dir : {"/usr/sbin", "/sbin", "/usr/bin", "/bin"}) {
    std::string path = absl::StrCat(dir, "/", name);
    if (access(path.c_str(), X_OK) == 0) return path;
  }
  return absl::NotFoundError(absl::StrCat(name, " is not installed"));
}

struct SocketAddress {
  sockaddr_storage storage = {};
  socklen_t size = 0;
  int family = AF_INET;
};

absl::StatusOr<SocketAddress> ToSocketAddress(absl::string_view text, uint16_t port) {
  ZYGO_ASSIGN_OR_RETURN(IpAddress address, IpAddress::Parse(text));
  SocketAddress out;
  out.family = address.family();
  if (address.is_v4()) {
    auto* sin = reinterpret_cast<sockaddr_in*>(&out.storage);
    sin->sin_family = AF_INET;
    sin->sin_port = htons(port);
    sin->sin_addr = address.v4();
    out.size = sizeof(sockaddr_in);
  } else {
    auto* sin6 = reinterpret_cast<sockaddr_in6*>(&out.storage);
    sin6->sin6_family = AF_INET6;
    sin6->sin6_port = htons(port);
    sin6->sin6_addr = address.v6();
    out.size = sizeof(sockaddr_in6);
  }
  return out;
}

absl::StatusOr<base::UniqueFd> BoundSocket(int netns_fd, absl::string_view address, uint16_t port,
                                           int type) {
  ZYGO_ASSIGN_OR_RETURN(SocketAddress sa, ToSocketAddress(address, port));
  ZYGO_ASSIGN_OR_RETURN(base::UniqueFd fd, OpenSocketInNetns(netns_fd, sa.family, type, 0));
  const int one = 1;
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd.get(), reinterpret_cast<const sockaddr*>(&sa.storage), sa.size) != 0) {
    return base::ErrnoStatus(errno, absl::StrCat("bind(", address, ":", port, ")"));
  }
  return fd;
}

}  // namespace

absl::StatusOr<std::unique_ptr<TestNetns>> TestNetns::Create() {
  int ready[2];
  int stay[2];
  if (pipe2(ready, O_CLOEXEC) != 0) return base::ErrnoStatus(errno, "pipe2");
  if (pipe2(stay, O_CLOEXEC) != 0) {
    close(ready[0]);
    close(ready[1]);
    return base::ErrnoStatus(errno, "pipe2");
  }
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) return base::ErrnoStatus(errno, "fork");
  if (pid == 0) {
    // Child: async-signal-safe calls only. It dies with the test (PDEATHSIG, or EOF below).
    close(ready[0]);
    close(stay[1]);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);
    const char status = unshare(CLONE_NEWNET) == 0 ? 0 : static_cast<char>(errno);
    if (write(ready[1], &status, 1) != 1 || status != 0) _exit(1);
    char byte;
    for (;;) {
      const ssize_t got = read(stay[0], &byte, 1);
      if (got == 0 || (got < 0 && errno != EINTR)) _exit(0);
    }
  }
  close(ready[1]);
  close(stay[0]);
  base::UniqueFd ready_read(ready[0]);
  base::UniqueFd stay_write(stay[1]);
  char status = 0;
  ssize_t got;
  do {
    got = read(ready_read.get(), &status, 1);
  } while (got < 0 && errno == EINTR);
  if (got != 1 || status != 0) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    return base::ErrnoStatus(got == 1 ? status : ECHILD, "unshare(CLONE_NEWNET) in the holder");
  }
  const std::string path = absl::StrCat("/proc/", pid, "/ns/net");
  base::UniqueFd ns_fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!ns_fd.valid()) {
    const int err = errno;
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    return base::ErrnoStatus(err, absl::StrCat("open(", path, ")"));
  }
  return std::unique_ptr<TestNetns>(new TestNetns(pid, std::move(stay_write), std::move(ns_fd)));
}

TestNetns::~TestNetns() {
  stay_.Reset();
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
}

absl::StatusOr<std::string> TestNetns::Run(const std::vector<std::string>& argv) const {
  ZYGO_ASSIGN_OR_RETURN(const std::string program, FindProgram(argv.at(0)));
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  char* const env[] = {const_cast<char*>("PATH=/usr/sbin:/sbin:/usr/bin:/bin"), nullptr};
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return base::ErrnoStatus(errno, "pipe2");
  const pid_t pid = fork();
  if (pid < 0) return base::ErrnoStatus(errno, "fork");
  if (pid == 0) {
    // dup2 clears O_CLOEXEC on the copies, so only stdout/stderr survive exec.
    if (setns(ns_fd_.get(), CLONE_NEWNET) != 0 || dup2(out[1], 1) < 0 || dup2(out[1], 2) < 0) {
      _exit(126);
    }
    execve(program.c_str(), args.data(), env);
    _exit(127);
  }
  close(out[1]);
  base::UniqueFd read_end(out[0]);
  std::string output;
  char buffer[4096];
  for (;;) {
    const ssize_t got = read(read_end.get(), buffer, sizeof(buffer));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    output.append(buffer, static_cast<size_t>(got));
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::InternalError(absl::StrCat("`", absl::StrJoin(argv, " "),
                                            "` in the test netns failed (status ", status,
                                            "): ", output));
  }
  return output;
}

std::string ConnectOutcome::ToString() const {
  switch (result) {
    case ConnectResult::kConnected:
      return "connected";
    case ConnectResult::kRefused:
      return "refused (RST)";
    case ConnectResult::kDropped:
      return err == 0 ? "dropped (no answer)"
                      : absl::StrCat("dropped (", base::ErrnoName(err), ")");
    case ConnectResult::kError:
      return absl::StrCat("error ", base::ErrnoName(err));
  }
  return "?";
}

ConnectOutcome TryConnect(int netns_fd, absl::string_view address, uint16_t port, int timeout_ms) {
  absl::StatusOr<SocketAddress> sa = ToSocketAddress(address, port);
  if (!sa.ok()) return {ConnectResult::kError, EINVAL};
  absl::StatusOr<base::UniqueFd> fd =
      OpenSocketInNetns(netns_fd, sa->family, SOCK_STREAM | SOCK_NONBLOCK, 0);
  if (!fd.ok()) return {ConnectResult::kError, EBADF};
  int err = 0;
  if (connect(fd->get(), reinterpret_cast<const sockaddr*>(&sa->storage), sa->size) != 0) {
    err = errno;
    if (err == EINPROGRESS) {
      pollfd pfd = {fd->get(), POLLOUT, 0};
      const int ready = poll(&pfd, 1, timeout_ms);
      if (ready == 0) return {ConnectResult::kDropped, 0};
      socklen_t len = sizeof(err);
      getsockopt(fd->get(), SOL_SOCKET, SO_ERROR, &err, &len);
    }
  }
  if (err == 0) return {ConnectResult::kConnected, 0};
  if (err == ECONNREFUSED) return {ConnectResult::kRefused, err};
  if (err == EPERM) return {ConnectResult::kDropped, err};
  return {ConnectResult::kError, err};
}

absl::StatusOr<base::UniqueFd> Listen(int netns_fd, absl::string_view address, uint16_t port) {
  ZYGO_ASSIGN_OR_RETURN(base::UniqueFd fd, BoundSocket(netns_fd, address, port, SOCK_STREAM));
  if (listen(fd.get(), 128) != 0) return base::ErrnoStatus(errno, "listen");
  return fd;
}

absl::StatusOr<base::UniqueFd> BindUdp(int netns_fd, absl::string_view address, uint16_t port) {
  return BoundSocket(netns_fd, address, port, SOCK_DGRAM | SOCK_NONBLOCK);
}

int SendUdp(int netns_fd, absl::string_view address, uint16_t port) {
  absl::StatusOr<SocketAddress> sa = ToSocketAddress(address, port);
  if (!sa.ok()) return EINVAL;
  absl::StatusOr<base::UniqueFd> fd = OpenSocketInNetns(netns_fd, sa->family, SOCK_DGRAM, 0);
  if (!fd.ok()) return EBADF;
  const char payload[] = "zygo";
  if (sendto(fd->get(), payload, sizeof(payload), 0,
             reinterpret_cast<const sockaddr*>(&sa->storage), sa->size) < 0) {
    return errno;
  }
  return 0;
}

int SendIcmpEcho(int netns_fd, absl::string_view address) {
  absl::StatusOr<SocketAddress> sa = ToSocketAddress(address, 0);
  if (!sa.ok() || sa->family != AF_INET) return EINVAL;
  absl::StatusOr<base::UniqueFd> fd = OpenSocketInNetns(netns_fd, AF_INET, SOCK_RAW, IPPROTO_ICMP);
  if (!fd.ok()) return EBADF;
  // type 8 (echo request), code 0, checksum, id 1, sequence 1: the one's complement sum of
  // 0x0800 + 0x0001 + 0x0001 is 0x0802, so the checksum is 0xf7fd.
  const uint8_t echo[8] = {8, 0, 0xf7, 0xfd, 0, 1, 0, 1};
  if (sendto(fd->get(), echo, sizeof(echo), 0, reinterpret_cast<const sockaddr*>(&sa->storage),
             sa->size) < 0) {
    return errno;
  }
  return 0;
}

bool ReceivedUdp(int fd, int timeout_ms) {
  pollfd pfd = {fd, POLLIN, 0};
  if (poll(&pfd, 1, timeout_ms) <= 0) return false;
  char buffer[64];
  return recv(fd, buffer, sizeof(buffer), MSG_DONTWAIT) > 0;
}

}  // namespace zygo::net::testing
