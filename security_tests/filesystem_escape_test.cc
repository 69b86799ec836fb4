// Filesystem escapes: writes to the read-only root and volumes, reads of host files
// outside the image, mount/umount/pivot_root/chroot, /proc and /dev.
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "testing/harness.h"

namespace zygo::testing {
namespace {

std::string MakeTempDir() {
  std::string pattern = "/tmp/zygo-fs-test-XXXXXX";
  EXPECT_NE(mkdtemp(pattern.data()), nullptr);
  chmod(pattern.c_str(), 0755);
  return pattern;
}

TEST(FilesystemEscape, RootIsReadOnlyButTmpIsWritable) {
  RunResult control = RunProbe({"write-path", "/tmp"});
  ASSERT_EQ(Verdict(control, "write-path"), "allowed") << control.out << control.err;
  RunResult attempt = RunProbe({"write-root"});
  EXPECT_TRUE(absl::StartsWith(Verdict(attempt, "write-root"), "denied"))
      << attempt.out << attempt.err;
  RunResult in_usr = RunProbe({"write-path", "/usr"});
  EXPECT_TRUE(absl::StartsWith(Verdict(in_usr, "write-path"), "denied")) << in_usr.out;
}

TEST(FilesystemEscape, ReadOnlyVolumeRefusesWritesReadWriteVolumeTakesThem) {
  std::string dir = MakeTempDir();
  RunResult rw = RunProbe({"write-path", "/data"}, {"-v", dir + ":/data:rw"});
  ASSERT_EQ(Verdict(rw, "write-path"), "allowed") << rw.out << rw.err;
  RunResult ro = RunProbe({"write-path", "/data"}, {"-v", dir + ":/data:ro"});
  EXPECT_EQ(Verdict(ro, "write-path"), "denied EROFS") << ro.out << ro.err;
  rmdir(dir.c_str());
}

TEST(FilesystemEscape, HostFilesOutsideTheImageAreNotThere) {
  std::string dir = MakeTempDir();
  std::string secret = dir + "/secret.txt";
  std::ofstream(secret) << "host secret\n";
  RunResult control = RunProbeOnHost({"read-file", secret});
  ASSERT_EQ(Verdict(control, "read-file"), "allowed") << control.out;
  RunResult via_volume = RunProbe({"read-file", "/data/secret.txt"}, {"-v", dir + ":/data:ro"});
  ASSERT_EQ(Verdict(via_volume, "read-file"), "allowed") << via_volume.out << via_volume.err;
  RunResult attempt = RunProbe({"read-file", secret});
  EXPECT_EQ(Verdict(attempt, "read-file"), "denied ENOENT") << attempt.out;
  // The host's own /root, /home and /etc/shadow are not part of the image either.
  for (const char* path : {"/etc/shadow", "/root", "/home", "/sys/fs/cgroup"}) {
    RunResult other = RunProbe({"read-file", path});
    EXPECT_TRUE(absl::StartsWith(Verdict(other, "read-file"), "denied")) << path << other.out;
  }
  unlink(secret.c_str());
  rmdir(dir.c_str());
}

TEST(FilesystemEscape, MountUmountPivotRootAreRefused) {
  // Controls: on the host these calls reach the kernel's path checks (ENOENT).
  ASSERT_EQ(Verdict(RunProbeOnHost({"umount-root"}), "umount-root"), "denied ENOENT");
  ASSERT_EQ(Verdict(RunProbeOnHost({"pivot-root"}), "pivot-root"), "denied ENOENT");
  EXPECT_EQ(Verdict(RunProbe({"mount-tmpfs"}), "mount-tmpfs"), "denied EPERM");
  EXPECT_EQ(Verdict(RunProbe({"umount-root"}), "umount-root"), "denied EPERM");
  EXPECT_EQ(Verdict(RunProbe({"pivot-root"}), "pivot-root"), "denied EPERM");
}

TEST(FilesystemEscape, ChrootEscapeFindsNoHostPath) {
  std::string dir = MakeTempDir();
  std::string marker = dir + "/marker";
  std::ofstream(marker) << "x";
  RunResult attempt = RunProbe({"chroot-escape", marker});
  std::string verdict = Verdict(attempt, "chroot-escape");
  EXPECT_TRUE(absl::StartsWith(verdict, "denied")) << attempt.out << attempt.err;
  unlink(marker.c_str());
  rmdir(dir.c_str());
}

TEST(FilesystemEscape, ProcSysAndSysrqAreNotWritable) {
  // Control: the probe's open-for-write works on a writable file.
  RunResult control = RunProbe({"open-wronly", "/dev/null"});
  ASSERT_EQ(Verdict(control, "open-wronly"), "allowed") << control.out << control.err;
  RunResult sys = RunProbe({"proc-sys-write"});
  EXPECT_TRUE(absl::StartsWith(Verdict(sys, "proc-sys-write"), "denied")) << sys.out;
  RunResult sysrq = RunProbe({"sysrq-write"});
  EXPECT_TRUE(absl::StartsWith(Verdict(sysrq, "sysrq-write"), "denied")) << sysrq.out;
}

TEST(FilesystemEscape, MaskedProcFilesReadEmpty) {
  for (const char* path : {"/proc/keys", "/proc/timer_list", "/proc/kcore", "/proc/sched_debug"}) {
    if (access(path, R_OK) != 0) continue;  // not on this kernel
    RunResult control = RunProbeOnHost({"read-masked", path});
    if (Verdict(control, "read-masked") != "allowed") continue;  // empty on the host too
    RunResult attempt = RunProbe({"read-masked", path});
    EXPECT_EQ(Verdict(attempt, "read-masked"), "denied ENODATA") << path << attempt.out;
  }
  // At least one control must have run for the test to mean anything.
  ASSERT_EQ(Verdict(RunProbeOnHost({"read-masked", "/proc/timer_list"}), "read-masked"), "allowed");
}

TEST(FilesystemEscape, NoDeviceNodesCanBeMadeAndNoDevMem) {
  RunResult control = RunProbeOnHost({"mknod"});
  ASSERT_EQ(Verdict(control, "mknod"), "allowed") << control.out;
  EXPECT_TRUE(absl::StartsWith(Verdict(RunProbe({"mknod"}), "mknod"), "denied"));
  EXPECT_EQ(Verdict(RunProbe({"dev-mem"}), "dev-mem"), "denied ENOENT");
  // The devices a program needs are there and work.
  EXPECT_EQ(Verdict(RunProbe({"read-file", "/dev/urandom"}), "read-file"), "allowed");
}

TEST(FilesystemEscape, WorkdirThroughProcSelfFdIsRefused) {
  RunResult result = RunZygo({"-w", "/proc/self/fd/3"}, "host", {"/bin/true"});
  EXPECT_EQ(result.exit_code, 125);
  EXPECT_TRUE(absl::StrContains(result.err, "workdir")) << result.err;
  RunResult control = RunZygo({"-w", "/tmp"}, "host", {"/bin/true"});
  EXPECT_EQ(control.exit_code, 0) << control.err;
}

}  // namespace
}  // namespace zygo::testing
