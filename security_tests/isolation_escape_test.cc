// Isolation from the host's processes and network: signals, kill(-1), interfaces,
// the host's loopback listeners and abstract unix sockets.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "testing/harness.h"

namespace zygo::testing {
namespace {

TEST(IsolationEscape, SignalsCannotReachOutside) {
  std::string me = std::to_string(getpid());
  RunResult control = RunProbeOnHost({"kill-pid", me});
  ASSERT_EQ(Verdict(control, "kill-pid"), "allowed") << control.out;
  RunResult attempt = RunProbe({"kill-pid", me});
  EXPECT_TRUE(absl::StartsWith(Verdict(attempt, "kill-pid"), "denied")) << attempt.out;
  RunResult all = RunProbe({"kill-all"});
  EXPECT_TRUE(absl::StartsWith(Verdict(all, "kill-all"), "denied")) << all.out << all.err;
}

TEST(IsolationEscape, OnlyLoopbackInside) {
  RunResult control = RunProbeOnHost({"interfaces"});
  ASSERT_EQ(Verdict(control, "interfaces"), "allowed") << control.out;
  RunResult attempt = RunProbe({"interfaces"});
  EXPECT_EQ(Verdict(attempt, "interfaces"), "denied ENODEV") << attempt.out << attempt.err;
  EXPECT_TRUE(absl::StrContains(attempt.out, "iface=lo")) << attempt.out;
}

// "Loopback only" means the sandbox's own lo works: a server and a client inside talk.
TEST(IsolationEscape, TheSandboxesOwnLoopbackWorks) {
  RunResult inside =
      RunZygo({}, "host",
              {"/usr/bin/python3", "-c",
               "import socket\n"
               "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(1)\n"
               "c = socket.create_connection(s.getsockname(), timeout=2)\n"
               "a, _ = s.accept(); c.sendall(b'ping'); print(a.recv(4).decode())\n"});
  EXPECT_EQ(inside.exit_code, 0) << inside.err;
  EXPECT_EQ(inside.out, "ping\n");
}

TEST(IsolationEscape, HostLoopbackListenerIsUnreachable) {
  int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(listen(listener, 16), 0);
  socklen_t length = sizeof(address);
  getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length);
  std::string port = std::to_string(ntohs(address.sin_port));
  RunResult control = RunProbeOnHost({"connect-tcp", "127.0.0.1", port});
  ASSERT_EQ(Verdict(control, "connect-tcp"), "allowed") << control.out;
  RunResult attempt = RunProbe({"connect-tcp", "127.0.0.1", port});
  EXPECT_TRUE(absl::StartsWith(Verdict(attempt, "connect-tcp"), "denied")) << attempt.out;
  close(listener);
}

TEST(IsolationEscape, HostAbstractUnixSocketIsUnreachable) {
  std::string name = absl::StrCat("zygo-test-", getpid());
  int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address = {};
  address.sun_family = AF_UNIX;
  memcpy(address.sun_path + 1, name.data(), name.size());
  socklen_t length = offsetof(sockaddr_un, sun_path) + 1 + name.size();
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&address), length), 0);
  ASSERT_EQ(listen(listener, 16), 0);
  RunResult control = RunProbeOnHost({"connect-abstract", name});
  ASSERT_EQ(Verdict(control, "connect-abstract"), "allowed") << control.out;
  RunResult attempt = RunProbe({"connect-abstract", name});
  EXPECT_TRUE(absl::StartsWith(Verdict(attempt, "connect-abstract"), "denied")) << attempt.out;
  close(listener);
}

TEST(IsolationEscape, CgroupFilesystemIsNotVisible) {
  RunResult control = RunProbeOnHost({"cgroup-visible"});
  ASSERT_EQ(Verdict(control, "cgroup-visible"), "allowed") << control.out;
  RunResult attempt = RunProbe({"cgroup-visible"});
  EXPECT_TRUE(absl::StartsWith(Verdict(attempt, "cgroup-visible"), "denied")) << attempt.out;
}

}  // namespace
}  // namespace zygo::testing
