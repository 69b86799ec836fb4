// Kernel surfaces the seccomp allowlist closes: namespaces, keyrings, bpf, perf,
// io_uring, userfaultfd, file handles, modules, kexec, reboot, foreign ABIs. Each is
// first shown reaching the kernel on the host (a control), then refused inside.
#include <iostream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/harness.h"

namespace zygo::testing {
namespace {

struct SyscallCase {
  std::string subcommand;
  std::vector<std::string> args;
  // What the host answers: "allowed", or the errno that shows the call got past any
  // filter into the kernel's own argument checks ("|" between answers kernels differ
  // on). Empty: the host control is skipped (the call would do something on the host).
  std::string host_verdict;
  std::string sandbox_verdict;
};

class SyscallEscape : public ::testing::TestWithParam<SyscallCase> {};

TEST_P(SyscallEscape, RefusedInsideButReachesTheKernelOutside) {
  const SyscallCase& c = GetParam();
  std::vector<std::string> args = {c.subcommand};
  args.insert(args.end(), c.args.begin(), c.args.end());
  if (!c.host_verdict.empty()) {
    RunResult control = RunProbeOnHost(args);
    std::string verdict = Verdict(control, c.subcommand);
    // A kernel built without the feature answers ENOSYS (a socket family without its
    // module, EAFNOSUPPORT): the call still got past every filter, which is all the
    // control has to show.
    if (!absl::StrContains(verdict, "ENOSYS") && !absl::StrContains(verdict, "EAFNOSUPPORT")) {
      const std::vector<std::string> answers = absl::StrSplit(c.host_verdict, '|');
      ASSERT_THAT(answers, ::testing::Contains(verdict)) << control.out << control.err;
    }
  }
  RunResult attempt = RunProbe(args);
  EXPECT_EQ(Verdict(attempt, c.subcommand), c.sandbox_verdict) << attempt.out << attempt.err;
}

INSTANTIATE_TEST_SUITE_P(
    Allowlist, SyscallEscape,
    ::testing::Values(SyscallCase{"unshare-user", {}, "allowed", "denied EPERM"},
                      SyscallCase{"unshare-mount", {}, "allowed", "denied EPERM"},
                      SyscallCase{"unshare-user-mount", {}, "allowed", "denied ENOSPC"},
                      SyscallCase{"unshare-net", {}, "allowed", "denied EPERM"},
                      SyscallCase{"unshare-pid", {}, "allowed", "denied EPERM"},
                      SyscallCase{"unshare-cgroup", {}, "allowed", "denied EPERM"},
                      SyscallCase{"unshare-ipc", {}, "allowed", "denied EPERM"},
                      SyscallCase{"unshare-uts", {}, "allowed", "denied EPERM"},
                      SyscallCase{"clone-newuser", {}, "allowed", "denied EPERM"},
                      SyscallCase{"clone3-newuser", {}, "allowed", "denied ENOSYS"},
                      SyscallCase{"setns", {"/proc/self/ns/net"}, "allowed", "denied EPERM"},
                      SyscallCase{"add-key", {}, "allowed", "denied EPERM"},
                      SyscallCase{"keyctl-join", {}, "allowed", "denied EPERM"},
                      SyscallCase{"bpf", {}, "denied E2BIG|denied EFAULT", "denied EPERM"},
                      SyscallCase{"perf-event-open", {}, "allowed", "denied EPERM"},
                      SyscallCase{"io-uring-setup", {}, "allowed", "denied EPERM"},
                      SyscallCase{"userfaultfd", {}, "allowed", "denied EPERM"},
                      SyscallCase{"open-by-handle-at", {}, "denied ESTALE", "denied EPERM"},
                      SyscallCase{"reboot", {}, "denied EINVAL", "denied EPERM"},
                      SyscallCase{"kexec-load", {}, "denied EINVAL", "denied EPERM"},
                      SyscallCase{"finit-module", {}, "denied EBADF", "denied EPERM"},
                      SyscallCase{"hostname-set", {}, "allowed", "denied EPERM"},
                      SyscallCase{"ptrace-parent", {}, "", "denied EPERM"},
                      // Socket families the network modes never need: the hypervisor's
                      // vsock port space, raw packets, the kernel's crypto, XDP, key and
                      // Bluetooth sockets, netlink beyond routing; also with the family's
                      // upper 32 bits set, which the kernel ignores.
                      SyscallCase{"socket", {"vsock"}, "allowed", "denied EPERM"},
                      SyscallCase{"socket", {"vsock-high"}, "allowed", "denied EPERM"},
                      SyscallCase{"socket", {"packet"}, "allowed", "denied EPERM"},
                      SyscallCase{"socket", {"alg"}, "allowed", "denied EPERM"},
                      SyscallCase{"socket", {"xdp"}, "allowed", "denied EPERM"},
                      SyscallCase{"socket", {"key"}, "allowed", "denied EPERM"},
                      SyscallCase{"socket", {"bluetooth"}, "allowed", "denied EPERM"},
                      SyscallCase{"socket", {"netlink-uevent"}, "allowed", "denied EPERM"},
                      SyscallCase{"socket", {"netlink-audit"}, "allowed", "denied EPERM"},
                      SyscallCase{"socketpair", {"inet"}, "denied EOPNOTSUPP", "denied EPERM"},
                      // Native AIO: one event budget (fs.aio-max-nr) for the whole host.
                      // ENOSYS, as on a kernel without AIO, so libraries fall back.
                      SyscallCase{"aio-setup", {"16"}, "allowed", "denied ENOSYS"}),
    [](const ::testing::TestParamInfo<SyscallCase>& info) {
      std::string name = info.param.subcommand;
      if (name == "socket" || name == "socketpair") name += "_" + info.param.args[0];
      for (char& c : name) {
        if (c == '-') c = '_';
      }
      return name;
    });

// What the network modes need still works: unix, IPv4, IPv6 and routing netlink
// sockets (getaddrinfo and `ip` use the last), and unix socket pairs.
TEST(SocketFamilies, TheOnesSandboxesNeedStillWork) {
  for (const char* family : {"unix", "inet", "inet6", "netlink-route"}) {
    RunResult attempt = RunProbe({"socket", family});
    EXPECT_EQ(Verdict(attempt, "socket"), "allowed") << family << attempt.out << attempt.err;
  }
  RunResult pair = RunProbe({"socketpair", "unix"});
  EXPECT_EQ(Verdict(pair, "socketpair"), "allowed") << pair.out << pair.err;
}

// The i386 (int 0x80) and x32 entry points are foreign ABIs: the filter never lets a
// 32-bit syscall table bypass the 64-bit rules. zygo-init, the filter's listener, kills
// the process and says which call it made; zygo exits 159 (128+SIGSYS).
// A kernel without IA32 emulation (ia32_emulation=0) kills int 0x80 itself, before any
// filter: there only x32, which every filter sees, is attempted.
TEST(ForeignAbi, Int80AndX32AreKilledAndNamed) {
  RunResult int80_control = RunProbeOnHost({"int80"});
  const bool host_runs_i386 = Verdict(int80_control, "int80") == "allowed";
  if (!host_runs_i386) {
    std::cerr << "this kernel runs no i386 code (int 0x80 on the host: exit "
              << int80_control.exit_code << "): only x32 is attempted\n";
  }
  for (const char* subcommand : {"int80", "x32"}) {
    if (std::string(subcommand) == "int80" && !host_runs_i386) continue;
    RunResult attempt = RunProbe({subcommand});
    std::string verdict = Verdict(attempt, subcommand);
    EXPECT_EQ(verdict, "") << subcommand << attempt.out;  // killed before it could say
    EXPECT_EQ(attempt.exit_code, 159) << subcommand << attempt.out << attempt.err;
    EXPECT_EQ(OutcomeField(attempt, "status"), "\"seccomp_killed\"") << attempt.outcome_json;
    EXPECT_EQ(OutcomeField(attempt, "syscall"), "\"getpid\"") << attempt.outcome_json;
    EXPECT_EQ(OutcomeField(attempt, "arch"),
              std::string(subcommand) == "int80" ? "\"i386\"" : "\"x32\"")
        << attempt.outcome_json;
    EXPECT_EQ(OutcomeField(attempt, "command"), "true") << attempt.outcome_json;
    EXPECT_TRUE(absl::StrContains(attempt.err, "it called getpid")) << attempt.err;
  }
}

// A process the command started is killed for the call; the command outlives it and exits
// 0: zygo exits 0 too, and the status still says what happened in the run.
TEST(ForeignAbi, AKilledChildIsReportedBesideTheCommandsOwnExit) {
  RunResult control = RunProbeOnHost({"int80"});
  if (Verdict(control, "int80") != "allowed") {
    GTEST_SKIP() << "this kernel runs no i386 code (int 0x80 on the host: exit "
                 << control.exit_code << ")";
  }
  RunResult attempt = RunProbe({"int80-child"});
  EXPECT_TRUE(absl::StrContains(attempt.out, "child-killed-by-signal=SIGKILL")) << attempt.out;
  EXPECT_EQ(attempt.exit_code, 0) << attempt.err;
  EXPECT_EQ(OutcomeField(attempt, "status"), "\"seccomp_killed\"") << attempt.outcome_json;
  EXPECT_EQ(OutcomeField(attempt, "command"), "false") << attempt.outcome_json;
}

// --explain-denials: the refused calls still fail with EPERM, and are counted by name.
TEST(ExplainDenials, RefusedCallsAreNamedAndCounted) {
  RunResult plain = RunProbe({"mount-tmpfs"});
  ASSERT_EQ(Verdict(plain, "mount-tmpfs"), "denied EPERM") << plain.out;
  EXPECT_EQ(OutcomeField(plain, "seccomp_denials"), "") << plain.outcome_json;
  RunResult explained = RunProbe({"mount-tmpfs"}, {"--explain-denials"});
  EXPECT_EQ(Verdict(explained, "mount-tmpfs"), "denied EPERM") << explained.out;
  EXPECT_TRUE(absl::StrContains(explained.outcome_json, "\"syscall\": \"mount\""))
      << explained.outcome_json;
  EXPECT_TRUE(absl::StrContains(explained.err, "seccomp refused (EPERM): mount x"))
      << explained.err;
  // Nothing refused: said so, not left out.
  RunResult clean = RunProbe({"write-path", "/tmp"}, {"--explain-denials"});
  EXPECT_EQ(Verdict(clean, "write-path"), "allowed") << clean.out;
  EXPECT_TRUE(absl::StrContains(clean.err, "seccomp refused no call")) << clean.err;
}

}  // namespace
}  // namespace zygo::testing
