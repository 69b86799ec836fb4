// Privileges: capabilities, setuid binaries, setuid files and devices made through
// volumes, TIOCSTI terminal injection, fds and environment crossing into the sandbox.
#include <fcntl.h>
#include <pty.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <termios.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

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

// A directory where a setuid bit takes effect on this host, for the control; "" if none
// (a host whose /tmp and /var/tmp are mounted nosuid).
std::string SetuidCapableTempRoot() {
  for (const char* root : {"/tmp", "/var/tmp"}) {
    struct statvfs fs {};
    if (statvfs(root, &fs) == 0 && (fs.f_flag & ST_NOSUID) == 0) return root;
  }
  return "";
}

TEST(PrivilegeEscape, SetuidBinaryGainsNothing) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to make a setuid-root copy";
  const std::string root = SetuidCapableTempRoot();
  if (root.empty()) {
    GTEST_SKIP() << "/tmp and /var/tmp are mounted nosuid here: no control can show a setuid "
                    "binary working on the host";
  }
  std::string dir = root + "/zygo-suid-XXXXXX";
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

// A directory the test owns, bound read-write: as root, the sandbox's root is the host's,
// so a setuid-root file made there would be one on the host for any user to run.
class RwVolume : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "as root the sandbox's uid 0 is the host's";
    dir_ = "/tmp/zygo-rwvol-XXXXXX";
    ASSERT_NE(mkdtemp(dir_.data()), nullptr);
    chmod(dir_.c_str(), 0777);
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  std::vector<std::string> Volume() const { return {"-v", dir_ + ":/vol:rw"}; }
  std::string dir_;
};

TEST_F(RwVolume, NoSetuidOrSetgidFileIsMade) {
  // Control: on the host, the same probe in the same directory makes a setuid file.
  RunResult control = RunProbeOnHost({"chmod-setid", dir_, "4755"});
  ASSERT_EQ(Verdict(control, "chmod-setid"), "allowed") << control.out << control.err;
  // Control inside: an ordinary mode change works.
  RunResult plain = RunProbe({"chmod-setid", "/vol", "0750"}, Volume());
  ASSERT_EQ(Verdict(plain, "chmod-setid"), "allowed") << plain.out << plain.err;
  for (const char* mode : {"4755", "2755", "6755"}) {
    for (const std::vector<std::string>& user :
         {std::vector<std::string>{}, std::vector<std::string>{"-u", "1000"}}) {
      std::vector<std::string> flags = Volume();
      flags.insert(flags.end(), user.begin(), user.end());
      RunResult attempt = RunProbe({"chmod-setid", "/vol", mode, "keep"}, flags);
      EXPECT_EQ(Verdict(attempt, "chmod-setid"), "denied EPERM") << mode << attempt.out;
    }
  }
  // Seen from the host: no file in the volume has either bit.
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
    struct stat st {};
    ASSERT_EQ(stat(entry.path().c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & (S_ISUID | S_ISGID), 0u) << entry.path();
  }
}

// The other way to a setuid file: create it with the bits, then write the binary into it.
// The kernel clears S_ISUID on a write by a process without CAP_FSETID, which no sandbox
// has. (On the host, as root, the bit stays: the control.)
TEST_F(RwVolume, ACreatedSetuidFileLosesTheBitWhenWritten) {
  RunResult control = RunProbeOnHost({"create-setuid", dir_});
  ASSERT_EQ(Verdict(control, "create-setuid"), "allowed") << control.out << control.err;
  RunResult attempt = RunProbe({"create-setuid", "/vol"}, Volume());
  EXPECT_EQ(Verdict(attempt, "create-setuid"), "denied EPERM") << attempt.out << attempt.err;
}

TEST_F(RwVolume, NoDeviceNodeOrFileCapabilityIsMade) {
  for (const char* type : {"char", "block"}) {
    RunResult control = RunProbeOnHost({"mknod-type", dir_, type});
    ASSERT_EQ(Verdict(control, "mknod-type"), "allowed") << type << control.out;
    RunResult attempt = RunProbe({"mknod-type", "/vol", type}, Volume());
    EXPECT_EQ(Verdict(attempt, "mknod-type"), "denied EPERM") << type << attempt.out;
  }
  RunResult fifo = RunProbe({"mknod-type", "/vol", "fifo"}, Volume());
  EXPECT_EQ(Verdict(fifo, "mknod-type"), "allowed") << fifo.out << fifo.err;
  RunResult caps_control = RunProbeOnHost({"set-file-caps", dir_});
  ASSERT_EQ(Verdict(caps_control, "set-file-caps"), "allowed") << caps_control.out;
  RunResult caps = RunProbe({"set-file-caps", "/vol"}, Volume());
  EXPECT_EQ(Verdict(caps, "set-file-caps"), "denied EPERM") << caps.out << caps.err;
}

// -u N means host uid N as root, as it does in docker: a file the sandbox makes in a
// volume belongs to N, not to root. (Rootless, every uid inside is the caller's own.)
TEST_F(RwVolume, UserFlagMapsToTheSameHostUser) {
  RunResult as_root = RunZygo(Volume(), "host", {"/bin/touch", "/vol/made-by-root"});
  ASSERT_EQ(as_root.exit_code, 0) << as_root.err;
  RunResult as_user = RunZygo({"-v", dir_ + ":/vol:rw", "-u", "1234:2345"}, "host",
                              {"/bin/touch", "/vol/made-by-1234"});
  ASSERT_EQ(as_user.exit_code, 0) << as_user.err;
  struct stat st {};
  ASSERT_EQ(stat((dir_ + "/made-by-root").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u);
  ASSERT_EQ(stat((dir_ + "/made-by-1234").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 1234u);
  EXPECT_EQ(st.st_gid, 2345u);
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

// A sandbox holding the caller's terminal may change its modes while it runs (it is its
// terminal too), but they do not outlive the run: `stty -echo` left the caller typing
// blind. Control: the same command on the host leaves the change behind.
TEST(PrivilegeEscape, TerminalModesAreRestoredAfterTheRun) {
  int master, slave;
  ASSERT_EQ(openpty(&master, &slave, nullptr, nullptr, nullptr), 0);
  auto echo_on = [&] {
    struct termios modes;
    EXPECT_EQ(tcgetattr(slave, &modes), 0);
    return (modes.c_lflag & ECHO) != 0;
  };
  ASSERT_TRUE(echo_on());
  RunOptions options;
  options.stdin_fd = slave;
  options.want_outcome = false;
  RunResult control = RunOnHost({"/bin/sh", "-c", "stty -echo"}, options);
  ASSERT_EQ(control.exit_code, 0) << control.err;
  ASSERT_FALSE(echo_on()) << "control: stty -echo on the host turns echo off";
  struct termios modes;
  ASSERT_EQ(tcgetattr(slave, &modes), 0);
  modes.c_lflag |= ECHO;
  ASSERT_EQ(tcsetattr(slave, TCSANOW, &modes), 0);
  RunResult attempt = RunZygo({}, "host", {"/bin/sh", "-c", "stty -echo && stty -a"}, options);
  EXPECT_EQ(attempt.exit_code, 0) << attempt.err;
  EXPECT_TRUE(absl::StrContains(attempt.out, "-echo "))
      << "inside, the change took: " << attempt.out;
  EXPECT_TRUE(echo_on()) << "echo is still off after the run";
  close(master);
  close(slave);
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
