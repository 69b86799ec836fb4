// Kernel surfaces the seccomp allowlist closes: namespaces, keyrings, bpf, perf,
// io_uring, userfaultfd, file handles, modules, kexec, reboot, foreign ABIs. Each is
// first shown reaching the kernel on the host (a control), then refused inside.
#include <string>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "testing/harness.h"

namespace zygo::testing {
namespace {

struct SyscallCase {
  std::string subcommand;
  std::vector<std::string> args;
  // What the host answers: "allowed", or the errno that shows the call got past any
  // filter into the kernel's own argument checks. Empty: the host control is skipped
  // (the call would do something on the host).
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
    // A kernel built without the feature answers ENOSYS: the call still got past
    // every filter, which is all the control has to show.
    if (!absl::StrContains(verdict, "ENOSYS")) {
      ASSERT_EQ(verdict, c.host_verdict) << control.out << control.err;
    }
  }
  RunResult attempt = RunProbe(args);
  EXPECT_EQ(Verdict(attempt, c.subcommand), c.sandbox_verdict) << attempt.out << attempt.err;
}

INSTANTIATE_TEST_SUITE_P(
    Allowlist, SyscallEscape,
    ::testing::Values(SyscallCase{"unshare-user", {}, "allowed", "denied EPERM"},
                      SyscallCase{"unshare-mount", {}, "allowed", "denied EPERM"},
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
                      SyscallCase{"bpf", {}, "denied E2BIG", "denied EPERM"},
                      SyscallCase{"perf-event-open", {}, "allowed", "denied EPERM"},
                      SyscallCase{"io-uring-setup", {}, "allowed", "denied EPERM"},
                      SyscallCase{"userfaultfd", {}, "allowed", "denied EPERM"},
                      SyscallCase{"open-by-handle-at", {}, "denied ESTALE", "denied EPERM"},
                      SyscallCase{"reboot", {}, "denied EINVAL", "denied EPERM"},
                      SyscallCase{"kexec-load", {}, "denied EINVAL", "denied EPERM"},
                      SyscallCase{"finit-module", {}, "denied EBADF", "denied EPERM"},
                      SyscallCase{"hostname-set", {}, "allowed", "denied EPERM"},
                      SyscallCase{"ptrace-parent", {}, "", "denied EPERM"}),
    [](const ::testing::TestParamInfo<SyscallCase>& info) {
      std::string name = info.param.subcommand;
      for (char& c : name) {
        if (c == '-') c = '_';
      }
      return name;
    });

// The i386 (int 0x80) and x32 entry points are foreign ABIs: the filter kills the
// process instead of letting a 32-bit syscall table bypass the 64-bit rules.
TEST(ForeignAbi, Int80AndX32AreBlocked) {
  RunResult int80_control = RunProbeOnHost({"int80"});
  ASSERT_EQ(Verdict(int80_control, "int80"), "allowed") << int80_control.out;
  for (const char* subcommand : {"int80", "x32"}) {
    RunResult attempt = RunProbe({subcommand});
    std::string verdict = Verdict(attempt, subcommand);
    EXPECT_NE(verdict, "allowed") << subcommand << attempt.out;
    // Killed by SIGSYS (31): zygo exits 128+31 and the outcome says signaled.
    EXPECT_EQ(attempt.exit_code, 159) << subcommand << attempt.out << attempt.err;
    EXPECT_EQ(OutcomeField(attempt, "status"), "\"signaled\"") << attempt.outcome_json;
  }
}

}  // namespace
}  // namespace zygo::testing
