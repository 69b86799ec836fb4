// Nothing of the parent in a one-shot sandbox: the caller's environment and zygo's memory
// are not in any process of the sandbox, pid 1 (zygo-init) cannot be read through /proc,
// and its report pipe to zygo cannot be written from inside. Each refusal follows a
// control that shows the same probe reading or writing where nothing stops it.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "security_tests/process_memory.h"
#include "testing/harness.h"

namespace zygo::testing {
namespace {

// A value that is nowhere but in zygo's own environment (and so in its memory).
std::string CallerSecret() {
  return absl::StrCat("zygo-caller-secret-", getpid(), "-",
                      std::chrono::steady_clock::now().time_since_epoch().count());
}

TEST(ParentLeak, PidOneEnvironmentAndMemoryAreNotReadableInside) {
  const std::string secret = CallerSecret();
  RunOptions options;
  options.env = {"ZYGO_CALLER_SECRET=" + secret};
  // Controls: the probe finds a needle in the memory and environment of a process it may
  // read (a dumpable child of its own, inside the sandbox), and the secret in its own
  // environment on the host.
  RunResult own_child = RunProbe({"scan-mem", "child", "needle-in-the-child"});
  ASSERT_EQ(Verdict(own_child, "scan-mem"), "allowed") << own_child.out << own_child.err;
  RunResult own_environ = RunProbe({"proc-file-has", "child", "environ", "PATH="});
  ASSERT_EQ(Verdict(own_environ, "proc-file-has"), "allowed") << own_environ.out;
  RunResult host = RunProbeOnHost({"proc-file-has", "self", "environ", secret}, options);
  ASSERT_EQ(Verdict(host, "proc-file-has"), "allowed") << host.out << host.err;
  // Attempts: pid 1's environment, memory and maps.
  RunResult environ = RunProbe({"proc-file-has", "1", "environ", secret}, {}, options);
  EXPECT_EQ(Verdict(environ, "proc-file-has"), "denied EACCES") << environ.out << environ.err;
  RunResult memory = RunProbe({"scan-mem", "1", secret}, {}, options);
  EXPECT_EQ(Verdict(memory, "scan-mem"), "denied EACCES") << memory.out << memory.err;
}

// Read from outside, as root, where nothing stops the reading: zygo's memory holds the
// caller's secret (the control), the sandbox's pid 1 does not, nor does the command.
TEST(ParentLeak, NoSandboxProcessHoldsTheCallersEnvironment) {
  const std::string secret = CallerSecret();
  const std::string marker = absl::StrCat("314.", getpid());  // the command's sleep time
  RunOptions options;
  options.env = {"ZYGO_CALLER_SECRET=" + secret};
  options.want_outcome = false;
  RunResult run;
  std::thread sandbox([&] { run = RunZygo({}, "host", {"/bin/sleep", marker}, options); });
  pid_t zygo = -1, init = -1, command = -1;
  for (int i = 0; i < 200 && command < 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
    for (int pid : ProcessesMatching(marker)) {
      std::string argv0 = Argv0(pid);
      if (absl::EndsWith(argv0, "/zygo")) zygo = pid;
      if (argv0 == "zygo-init") init = pid;
      if (argv0 == "/bin/sleep") command = pid;
    }
  }
  ASSERT_GT(zygo, 0);
  ASSERT_GT(init, 0) << "no zygo-init among the sandbox's processes";
  ASSERT_GT(command, 0);
  absl::StatusOr<bool> in_zygo = MemoryContains(zygo, secret);
  ASSERT_TRUE(in_zygo.ok()) << in_zygo.status();
  EXPECT_TRUE(*in_zygo) << "control: zygo's own memory holds its environment";
  for (pid_t pid : {init, command}) {
    absl::StatusOr<bool> held = MemoryContains(pid, secret);
    ASSERT_TRUE(held.ok()) << held.status();
    EXPECT_FALSE(*held) << "pid " << pid << " (" << Argv0(pid) << ") holds the caller's secret";
    absl::StatusOr<bool> in_environ = EnvironmentContains(pid, secret);
    ASSERT_TRUE(in_environ.ok()) << in_environ.status();
    EXPECT_FALSE(*in_environ) << Argv0(pid);
  }
  kill(zygo, SIGTERM);  // forwarded: the sleep ends, and so does the run
  sandbox.join();
  EXPECT_EQ(run.exit_code, 128 + SIGTERM) << run.err;
}

// The report pipe is how zygo learns what happened inside: a forged "setup failed" record
// would make it report 125 for a command that ran.
TEST(ParentLeak, ReportPipeCannotBeForgedFromInside) {
  RunResult control = RunProbe({"forge-report", "self"});
  ASSERT_EQ(Verdict(control, "forge-report"), "allowed") << control.out << control.err;
  RunResult attempt = RunProbe({"forge-report", "1"});
  EXPECT_EQ(Verdict(attempt, "forge-report"), "denied EACCES") << attempt.out << attempt.err;
  EXPECT_EQ(attempt.exit_code, 0) << attempt.err;
  EXPECT_EQ(OutcomeField(attempt, "status"), "\"ok\"") << attempt.outcome_json;
}

}  // namespace
}  // namespace zygo::testing
