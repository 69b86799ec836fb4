// Privileges: capabilities, setuid binaries, TIOCSTI terminal injection, fds and
// environment crossing into the sandbox.
#include <fcntl.h>
#include <pty.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "testing/harness.h"

namespace zygo::testing {
namespace {

TEST(PrivilegeEscape, EveryCapabilitySetIsEmpty) {
  RunResult control = RunProbeOnHost({"caps"});
  ASSERT_EQ(Verdict(control, "caps"), "allowed") << control.out;
  RunResult attempt = RunProbe({"caps"});
  EXPECT_EQ(Verdict(attempt, "caps"), "denied EPERM") << attempt.out << attempt.err;
  for (const char* set : {"CapPrm=0000000000000000", "CapEff=0000000000000000",
                          "CapBnd=0000000000000000", "CapAmb=0000000000000000"}) {
    EXPECT_TRUE(absl::StrContains(attempt.out, set)) << set << "\n" << attempt.out;
  }
}

TEST(PrivilegeEscape, SetuidBinaryGainsNothing) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to make a setuid-root copy";
  std::string dir = "/tmp/zygo-suid-XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  chmod(dir.c_str(), 0755);
  std::string copy = dir + "/probe";
  // The probe sits under /root in Bazel's cache, where nobody cannot reach it.
  std::filesystem::copy_file(ProbePath(), copy);
  ASSERT_EQ(chown(copy.c_str(), 0, 0), 0);
  ASSERT_EQ(chmod(copy.c_str(), 04755), 0);
  // Control: as nobody on the host, the setuid bit makes the probe root.
  RunOptions as_nobody;
  as_nobody.as_uid = 65534;
  as_nobody.as_gid = 65534;
  as_nobody.want_outcome = false;
  RunResult control = RunOnHost({copy, "whoami"}, as_nobody);
  ASSERT_EQ(Verdict(control, "whoami"), "allowed") << control.out << control.err;
  RunResult attempt =
      RunProbe({"setuid-gain", "/suid/probe"}, {"-u", "1000", "-v", dir + ":/suid:ro"});
  EXPECT_EQ(Verdict(attempt, "setuid-gain"), "denied EPERM") << attempt.out << attempt.err;
  std::filesystem::remove_all(dir);
}

// TIOCSTI pushes bytes into a terminal's input: the classic sandbox escape through a
// shared tty. Tried with the plain request number and with the upper 32 bits set.
TEST(PrivilegeEscape, TiocstiIsRefusedInBothForms) {
  if (geteuid() != 0) GTEST_SKIP() << "the host control needs CAP_SYS_ADMIN for TIOCSTI";
  for (const char* subcommand : {"tiocsti", "tiocsti-high"}) {
    int master, slave;
    ASSERT_EQ(openpty(&master, &slave, nullptr, nullptr, nullptr), 0);
    RunOptions options;
    options.stdin_fd = slave;
    // Control: on the host, as root, the same call pushes one space into this pty.
    RunResult control = RunProbeOnHost({subcommand}, options);
    ASSERT_EQ(Verdict(control, subcommand), "allowed") << control.out << control.err;
    RunResult attempt = RunProbe({subcommand}, {}, options);
    EXPECT_FALSE(absl::StrContains(attempt.out, "stdin-not-a-tty")) << attempt.out;
    EXPECT_TRUE(absl::StartsWith(Verdict(attempt, subcommand), "denied"))
        << subcommand << attempt.out << attempt.err;
    close(master);
    close(slave);
  }
}

TEST(PrivilegeEscape, OnlyStandardFdsReachTheCommand) {
  // Control: an inheritable fd left open in zygo's parent does reach a host process.
  int leaked = open("/dev/null", O_RDONLY);  // no O_CLOEXEC on purpose
  ASSERT_GE(leaked, 3);
  RunResult control = RunProbeOnHost({"fds"});
  ASSERT_EQ(Verdict(control, "fds"), "allowed") << control.out;
  RunResult attempt = RunProbe({"fds"});
  EXPECT_EQ(Verdict(attempt, "fds"), "denied EBADF") << attempt.out << attempt.err;
  close(leaked);
}

TEST(PrivilegeEscape, NoHostEnvironmentInside) {
  RunOptions options;
  options.env = {"ZYGO_HOST_SECRET=leaked"};
  RunResult control =
      RunProbe({"env", "ZYGO_HOST_SECRET"}, {"-e", "ZYGO_HOST_SECRET=given"}, options);
  ASSERT_EQ(Verdict(control, "env"), "allowed") << control.out << control.err;
  RunResult attempt =
      RunProbe({"env", "ZYGO_HOST_SECRET", "TEST_TMPDIR", "LD_PRELOAD"}, {}, options);
  EXPECT_EQ(Verdict(attempt, "env"), "denied ENOENT") << attempt.out;
}

}  // namespace
}  // namespace zygo::testing
