// Escape probe subcommands (escape_probe.cc): the filesystem: writes and reads where a sandbox may
// not, mounts and roots.
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstddef>
#include <string>

#include "security_tests/testcases/escape_probes.h"
#include "security_tests/testcases/probe_support.h"

namespace zygo::security_tests {
namespace {

// ---------------------------------------------------------------------------------------------
// Filesystem writes and reads.

// Creates, then removes, a new file; allowed means the directory is writable.
Outcome CreateAndRemove(const std::string& path) {
  Info("path=" + path);
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return Denied(errno);
  close(fd);
  if (unlink(path.c_str()) != 0) Info("unlink failed: " + ErrnoName(errno));
  return Allowed();
}

// Host control as root: allowed (unless / itself is mounted read-only).
Outcome ProbeWriteRoot(const Args&) {
  return CreateAndRemove(UniqueName("/zygo-probe-write-test"));
}

// Host control: allowed for /tmp; EROFS for a read-only mount.
Outcome ProbeWritePath(const Args& args) {
  return CreateAndRemove(UniqueName(args[0] + "/zygo-probe"));
}

// Opens read-only, reads up to 4 KiB and prints INFO bytes=N. With `require_data`, an empty
// read (a sandbox masks /proc files by bind-mounting /dev/null over them) is denied ENODATA.
Outcome ReadPrefix(const std::string& path, bool require_data) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return Denied(errno);
  char buf[4096];
  ssize_t n = ReadUpTo(fd, buf, sizeof buf);
  int err = errno;
  close(fd);
  if (n < 0) return Denied(err);
  Info("bytes=" + std::to_string(n));
  if (require_data && n == 0) return Denied(ENODATA);
  return Allowed();
}

Outcome ProbeReadFile(const Args& args) { return ReadPrefix(args[0], false); }

// Host control as root: /proc/kcore, /proc/keys, /proc/timer_list are readable (N > 0).
Outcome ProbeReadMasked(const Args& args) { return ReadPrefix(args[0], true); }

// Opens O_WRONLY (no O_CREAT, no O_TRUNC) and writes nothing: the open alone proves write
// access. O_NONBLOCK makes a FIFO without a reader fail with ENXIO instead of hanging.
Outcome OpenWriteOnly(const std::string& path) {
  return FromFd(open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
}

Outcome ProbeOpenWronly(const Args& args) {
  // Opening a watchdog device arms a hardware reboot timer: never do that on a host.
  if (args[0].find("watchdog") != std::string::npos) {
    fprintf(stderr, "escape_probe: refusing to open a watchdog device\n");
    return BadUsage();
  }
  return OpenWriteOnly(args[0]);
}

// Host control as root: allowed. Nothing is written, so the hostname is unchanged.
Outcome ProbeProcSysWrite(const Args&) { return OpenWriteOnly("/proc/sys/kernel/hostname"); }

// Host control as root: allowed. Only a write() would trigger anything; none is made.
Outcome ProbeSysrqWrite(const Args&) { return OpenWriteOnly("/proc/sysrq-trigger"); }

// Host control as root: allowed (mknod works even on nodev mounts), ENOENT for a missing /tmp.
Outcome ProbeMknod(const Args&) {
  std::string path = UniqueName("/tmp/zygo-probe-null");
  Info("path=" + path);
  if (mknod(path.c_str(), S_IFCHR | 0600, makedev(1, 3)) != 0) return Denied(errno);
  if (unlink(path.c_str()) != 0) Info("unlink failed: " + ErrnoName(errno));
  return Allowed();
}

// Host control as root: allowed where /dev/mem exists, ENOENT where the kernel lacks it.
Outcome ProbeDevMem(const Args&) { return FromFd(open("/dev/mem", O_RDONLY | O_CLOEXEC)); }

// ---------------------------------------------------------------------------------------------
// Mounts and roots.

// Host control as root: allowed; the tmpfs is detached again at once.
Outcome ProbeMountTmpfs(const Args&) {
  constexpr char kDir[] = "/tmp/zygo-probe-mnt";
  bool created = mkdir(kDir, 0700) == 0;
  if (!created && errno != EEXIST) Info("mkdir failed: " + ErrnoName(errno));
  Outcome out = FromRet(mount("none", kDir, "tmpfs", 0, nullptr));
  if (out.kind == Outcome::Kind::kAllowed && umount2(kDir, MNT_DETACH) != 0) {
    Info("umount failed: " + ErrnoName(errno));
  }
  if (created) rmdir(kDir);
  return out;
}

// umount2 resolves the path before checking CAP_SYS_ADMIN (fs/namespace.c ksys_umount), so a
// missing mountpoint answers ENOENT to anyone the syscall reaches; EPERM means seccomp.
// Host control: denied ENOENT. Unmounting anything real would break the caller's namespace.
Outcome ProbeUmountRoot(const Args&) { return FromRet(umount2("/zygo-nonexistent-mountpoint", 0)); }

// pivot_root checks CAP_SYS_ADMIN first, then resolves new_root. Host control as root: denied
// ENOENT; EPERM means no capability or seccomp. Not ("/tmp", "/tmp"): like the documented
// pivot_root(".", ".") idiom that can SUCCEED when /tmp is a mountpoint on a private tree.
Outcome ProbePivotRoot(const Args&) {
  return FromRet(
      syscall(SYS_pivot_root, "/zygo-nonexistent-new-root", "/zygo-nonexistent-put-old"));
}

// The classic escape: chroot into a subdirectory while the cwd stays outside it, walk up with
// "..", chroot("."). Allowed only if PATH (absent inside the sandbox) becomes visible.
// Host control as root: allowed for any existing PATH (it was never hidden).
Outcome ProbeChrootEscape(const Args& args) {
  const char* target = args[0].c_str();
  struct stat st;
  Info(std::string("visible-before=") + (stat(target, &st) == 0 ? "1" : "0"));
  int tmp_fd = open("/tmp", O_PATH | O_DIRECTORY | O_CLOEXEC);
  bool created = mkdir("/tmp/zygo-chroot-x", 0700) == 0;
  // A read-only /tmp leaves no directory to make; /proc serves as the jail instead.
  const char* jail = created || errno == EEXIST ? "/tmp/zygo-chroot-x" : "/proc";
  Info(std::string("jail=") + jail);
  Outcome out = FromRet(chroot(jail));
  if (out.kind == Outcome::Kind::kAllowed) {
    for (int i = 0; i < 64 && chdir("..") == 0; ++i) {
    }
    if (chroot(".") != 0) {
      out = DeniedAt("second chroot", errno);
    } else {
      out = stat(target, &st) == 0 ? Allowed() : Denied(ENOENT);
    }
  }
  if (created && tmp_fd >= 0) unlinkat(tmp_fd, "zygo-chroot-x", AT_REMOVEDIR);
  if (tmp_fd >= 0) close(tmp_fd);
  return out;
}

constexpr ProbeSpec kProbes[] = {
    {"write-root", "", 0, 0, "create+unlink a new file in /", ProbeWriteRoot},
    {"write-path", "DIR", 1, 1, "create+unlink a new file in DIR", ProbeWritePath},
    {"read-file", "PATH", 1, 1, "open O_RDONLY and read up to 4 KiB", ProbeReadFile},
    {"open-wronly", "PATH", 1, 1, "open O_WRONLY, write nothing", ProbeOpenWronly},
    {"mount-tmpfs", "", 0, 0, "mount tmpfs on /tmp/zygo-probe-mnt", ProbeMountTmpfs},
    {"umount-root", "", 0, 0, "umount2 a missing path (ENOENT=reached)", ProbeUmountRoot},
    {"pivot-root", "", 0, 0, "pivot_root to missing paths (ENOENT=reached)", ProbePivotRoot},
    {"chroot-escape", "PATH", 1, 1, "chroot/chdir(..) escape, then look for PATH",
     ProbeChrootEscape},
    {"mknod", "", 0, 0, "mknod a /dev/null twin in /tmp", ProbeMknod},
    {"dev-mem", "", 0, 0, "open /dev/mem O_RDONLY", ProbeDevMem},
    {"proc-sys-write", "", 0, 0, "open /proc/sys/kernel/hostname O_WRONLY", ProbeProcSysWrite},
    {"sysrq-write", "", 0, 0, "open /proc/sysrq-trigger O_WRONLY", ProbeSysrqWrite},
    {"read-masked", "PATH", 1, 1, "read a /proc file; allowed if non-empty", ProbeReadMasked},
};

}  // namespace

std::span<const ProbeSpec> FilesystemProbes() { return kProbes; }

}  // namespace zygo::security_tests
