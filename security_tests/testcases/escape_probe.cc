// Escape probe: security tests run it inside a Zygo sandbox, and outside as the positive
// control. Each subcommand attempts one escape-ish action and prints one RESULT line.
// Standalone on purpose (libc and kernel headers only, no project code), so the raw syscalls
// live here rather than in core/base/sys: the probe must not share code with what it tests.
//
// Output contract: zero or more "INFO ..." lines, then exactly one line
//   RESULT <subcommand> allowed
//   RESULT <subcommand> denied <ERRNO_NAME>
// and exit status 0. Bad usage exits 2 with usage text on stderr and no RESULT line. A probe
// killed by a signal (SIGSYS from seccomp, SIGKILL from the OOM killer) is left visible to
// the caller as that signal; probes that run the attempt in a child re-raise the child's signal.
//
// Safety: CI runs this as root on a real host if the sandbox is broken, so every attempt is
// harmless if it succeeds. Host-global files are opened O_WRONLY and nothing is written; the
// hostname is written back unchanged; reboot, kexec and module loading get arguments that a
// real kernel rejects even for root. Each probe's comment says what an unsandboxed kernel answers.

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/io_uring.h>
#include <linux/kexec.h>
#include <linux/keyctl.h>
#include <linux/magic.h>
#include <linux/perf_event.h>
#include <linux/sched.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "security_tests/testcases/probe_support.h"
#include "security_tests/testcases/tenant_probes.h"

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

// ---------------------------------------------------------------------------------------------
// Namespaces. Host control as root: all allowed.

int UnshareInChild(long flag) { return unshare(static_cast<int>(flag)) == 0 ? 0 : errno; }

Outcome ProbeUnshareUser(const Args&) { return RunInChild(UnshareInChild, CLONE_NEWUSER); }
Outcome ProbeUnshareMount(const Args&) { return RunInChild(UnshareInChild, CLONE_NEWNS); }
Outcome ProbeUnshareNet(const Args&) { return RunInChild(UnshareInChild, CLONE_NEWNET); }
Outcome ProbeUnsharePid(const Args&) { return RunInChild(UnshareInChild, CLONE_NEWPID); }
Outcome ProbeUnshareCgroup(const Args&) { return RunInChild(UnshareInChild, CLONE_NEWCGROUP); }
Outcome ProbeUnshareIpc(const Args&) { return RunInChild(UnshareInChild, CLONE_NEWIPC); }
Outcome ProbeUnshareUts(const Args&) { return RunInChild(UnshareInChild, CLONE_NEWUTS); }

// Raw clone (x86_64 order: flags, stack, parent_tid, child_tid, tls); stack 0 = fork-style.
Outcome ProbeCloneNewuser(const Args&) {
  return ReapRawClone(syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0));
}

Outcome Clone3(uint64_t flags) {
  clone_args args{};
  args.flags = flags;
  args.exit_signal = SIGCHLD;
  return ReapRawClone(syscall(SYS_clone3, &args, sizeof args));
}

// The sandbox's seccomp is expected to answer clone3 with ENOSYS (its flags live in memory a
// filter cannot read), so libc falls back to clone. Host control as root: both allowed.
Outcome ProbeClone3Newuser(const Args&) { return Clone3(CLONE_NEWUSER); }
Outcome ProbeClone3Plain(const Args&) { return Clone3(0); }

int SetnsInChild(long fd) { return setns(static_cast<int>(fd), 0) == 0 ? 0 : errno; }

// Host control as root: allowed for /proc/1/ns/* (joining the namespace it is already in).
Outcome ProbeSetns(const Args& args) {
  int fd = open(args[0].c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return DeniedAt("open", errno);
  Outcome out = RunInChild(SetnsInChild, fd);
  close(fd);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Kernel attack surface: syscalls a sandbox should not reach at all.

// Adds a key to this process's own keyring, which dies with the process. Host: allowed.
Outcome ProbeAddKey(const Args&) {
  return FromRet(syscall(SYS_add_key, "user", "zygo-probe", "x", 1, KEY_SPEC_PROCESS_KEYRING));
}

// Joins a fresh anonymous session keyring for this process only. Host: allowed.
Outcome ProbeKeyctlJoin(const Args&) {
  return FromRet(syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, nullptr));
}

// An all-zero BPF_PROG_LOAD attr has no instructions, so nothing can load. Root reaches the
// argument checks (EINVAL/E2BIG); unprivileged callers get EPERM (unprivileged_bpf_disabled).
Outcome ProbeBpf(const Args&) {
  bpf_attr attr{};
  return FromFd(syscall(SYS_bpf, BPF_PROG_LOAD, &attr, sizeof attr));
}

// A user-space-only software counter on self: allowed even unprivileged at paranoid <= 2.
Outcome ProbePerfEventOpen(const Args&) {
  perf_event_attr attr{};
  attr.type = PERF_TYPE_SOFTWARE;
  attr.size = sizeof attr;
  attr.config = PERF_COUNT_SW_TASK_CLOCK;
  attr.disabled = 1;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  return FromFd(syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC));
}

// Host control: allowed unless kernel.io_uring_disabled is set.
Outcome ProbeIoUringSetup(const Args&) {
  io_uring_params params{};
  return FromFd(syscall(SYS_io_uring_setup, 1, &params));
}

// Host control as root: allowed; EPERM unprivileged when vm.unprivileged_userfaultfd = 0.
Outcome ProbeUserfaultfd(const Args&) { return FromFd(syscall(SYS_userfaultfd, O_CLOEXEC)); }

// "Shocker" (2014): open_by_handle_at with a forged handle reaches inodes outside a chroot.
// The handle names an inode that does not exist, so real root gets ESTALE; without
// CAP_DAC_READ_SEARCH the kernel answers EPERM.
Outcome ProbeOpenByHandleAt(const Args&) {
  alignas(file_handle) unsigned char storage[sizeof(file_handle) + 8] = {};
  auto* handle = reinterpret_cast<file_handle*>(storage);
  handle->handle_bytes = 8;
  handle->handle_type = 1;  // FILEID_INO32_GEN {inode, generation}, as shocker used.
  const unsigned char garbage[8] = {0xfe, 0xff, 0xff, 0x7f, 0xef, 0xbe, 0xad, 0xde};
  memcpy(handle->f_handle, garbage, sizeof garbage);
  return FromFd(open_by_handle_at(AT_FDCWD, handle, O_RDONLY | O_CLOEXEC));
}

// Flag bit 0x8000 is undefined and 17 segments exceed KEXEC_SEGMENT_MAX (16): after the
// CAP_SYS_BOOT check (EPERM) real root gets EINVAL, or ENOSYS without CONFIG_KEXEC. Zero
// segments with valid flags would UNLOAD the loaded kexec image, so that form is avoided.
// Since 6.6 a permitted call also consumes one kernel.kexec_load_limit_{reboot,panic} (default
// -1, unlimited), the only trace a root run leaves.
Outcome ProbeKexecLoad(const Args&) {
  return FromRet(syscall(SYS_kexec_load, 0UL, KEXEC_SEGMENT_MAX + 1, nullptr, 0x8000UL));
}

// Past the CAP_SYS_MODULE check (EPERM) the kernel looks up fd -1: EBADF even for root.
Outcome ProbeFinitModule(const Args&) { return FromRet(syscall(SYS_finit_module, -1, "", 0)); }

// A zero-length image is shorter than an ELF header: ENOEXEC for root, EPERM otherwise.
Outcome ProbeInitModule(const Args&) { return FromRet(syscall(SYS_init_module, nullptr, 0, "")); }

// Magic numbers are checked right after CAP_SYS_BOOT: bad magic gives EINVAL for root (and for
// a process with CAP_SYS_BOOT in its own pid namespace's user namespace), EPERM otherwise. The
// command is invalid too, in case a kernel ever reordered the checks.
Outcome ProbeReboot(const Args&) {
  return FromRet(syscall(SYS_reboot, 0x5a5a5a5a, 0x5a5a5a5a, 0x5a5a5a5aU, nullptr));
}

// ---------------------------------------------------------------------------------------------
// Terminal injection. Needs a pty on fd 0 that the test owns: success pushes one space into
// that pty's input queue. Host control: allowed on a pty (as root even with
// dev.tty.legacy_tiocsti = 0, which makes it EIO for others), ENOTTY on a non-tty.

void NoteIfNotATty() {
  if (!isatty(0)) Info("stdin-not-a-tty");
}

Outcome ProbeTiocsti(const Args&) {
  NoteIfNotATty();
  const char kByte = ' ';
  return FromRet(ioctl(0, TIOCSTI, &kByte));
}

// The kernel truncates the ioctl command to 32 bits, but seccomp sees all 64: a filter that
// compares the full argument with TIOCSTI misses this form.
Outcome ProbeTiocstiHigh(const Args&) {
  NoteIfNotATty();
  const char kByte = ' ';
  return FromRet(syscall(SYS_ioctl, 0, 0xffffffff00000000UL | TIOCSTI, &kByte));
}

// ---------------------------------------------------------------------------------------------
// Identity and privilege.

// Host control: allowed as root with caps, or for anyone with a non-empty bounding set.
Outcome ProbeCaps(const Args&) {
  std::string status;
  if (!ReadWholeFile("/proc/self/status", &status)) return DeniedAt("read status", errno);
  bool any = false;
  for (std::string_view field : {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"}) {
    std::string value = StatusField(status, field);
    Info(std::string(field) + "=" + value);
    if (field != "CapInh" && strtoull(value.c_str(), nullptr, 16) != 0) any = true;
  }
  return any ? Allowed() : Denied(EPERM);
}

// Allowed only for euid 0 with effective capabilities. Host control as root: allowed.
Outcome ProbeWhoami(const Args&) {
  uint64_t cap_eff = CapEff();
  char hex[32];
  snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(cap_eff));
  Info("euid=" + std::to_string(geteuid()) + " uid=" + std::to_string(getuid()) + " capeff=" + hex);
  return geteuid() == 0 && cap_eff != 0 ? Allowed() : Denied(EPERM);
}

// Child side of setuid-gain: stdout to the pipe, exec PATH whoami; exec errno on `err_fd`.
[[noreturn]] void ExecWhoami(const char* path, int out_fd, int err_fd) {
  if (dup2(out_fd, STDOUT_FILENO) < 0) _exit(127);
  char* const argv[] = {const_cast<char*>(path), const_cast<char*>("whoami"), nullptr};
  execve(path, argv, environ);
  int err = errno;
  if (write(err_fd, &err, sizeof err) != sizeof err) _exit(127);
  _exit(127);
}

// PATH is a setuid-root copy of this probe placed by the test. Allowed when the exec gained
// root with capabilities (the child's "whoami" said so). Host control: allowed.
Outcome ProbeSetuidGain(const Args& args) {
  const char* path = args[0].c_str();
  struct stat st;
  if (stat(path, &st) != 0) return DeniedAt("stat", errno);
  if ((st.st_mode & S_ISUID) == 0) {
    Info("not-setuid");
    return Denied(ENOENT);
  }
  int out[2], err_pipe[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
    return DeniedAt("pipe2", errno);
  }
  pid_t pid = fork();
  if (pid < 0) return DeniedAt("fork", errno);
  if (pid == 0) ExecWhoami(path, out[1], err_pipe[1]);
  close(out[1]);
  close(err_pipe[1]);
  std::string output;
  char buf[4096];
  for (ssize_t n; (n = ReadUpTo(out[0], buf, sizeof buf)) > 0;) output.append(buf, n);
  int exec_err = 0;
  ssize_t got = ReadUpTo(err_pipe[0], reinterpret_cast<char*>(&exec_err), sizeof exec_err);
  close(out[0]);
  close(err_pipe[0]);
  ReapOrDie(pid);
  if (got == sizeof exec_err) return DeniedAt("execve", exec_err);
  bool gained = false;
  for (size_t start = 0, end; start < output.size(); start = end + 1) {
    end = std::min(output.find('\n', start), output.size());
    std::string line = output.substr(start, end - start);
    Info("child " + line);
    if (line == "RESULT whoami allowed") gained = true;
  }
  return gained ? Allowed() : Denied(EPERM);
}

// Writes the current hostname back unchanged. Host control as root: allowed.
Outcome ProbeHostnameSet(const Args&) {
  utsname uts{};
  if (uname(&uts) != 0) return DeniedAt("uname", errno);
  Info(std::string("hostname=") + uts.nodename);
  return FromRet(sethostname(uts.nodename, strlen(uts.nodename)));
}

// PTRACE_ATTACH queues a SIGSTOP; consume that stop, then detach with signal 0 so the target
// (the test runner, in a host control) carries on untouched. The wait is bounded because a
// namespace init can ignore the SIGSTOP; exiting still detaches.
void WaitStopThenDetach(pid_t target) {
  int status = 0;
  pid_t got = 0;
  for (int i = 0; i < 200 && got == 0; ++i) {
    got = waitpid(target, &status, __WALL | WNOHANG);
    if (got == 0) usleep(10000);
  }
  if (got != target) Info("no-stop-observed");
  if (ptrace(PTRACE_DETACH, target, nullptr, nullptr) != 0) {
    Info("detach failed: " + ErrnoName(errno));
  }
}

// Host control as root: allowed (no Yama restriction applies to CAP_SYS_PTRACE).
Outcome ProbePtraceParent(const Args&) {
  pid_t target = getppid();
  // The parent of a pid namespace's first process lives outside it: getppid() returns 0.
  if (target == 0) target = 1;
  Info("target=" + std::to_string(target));
  if (ptrace(PTRACE_ATTACH, target, nullptr, nullptr) != 0) return Denied(errno);
  WaitStopThenDetach(target);
  return Allowed();
}

// ---------------------------------------------------------------------------------------------
// Resource limits. Never run these outside a sandbox.

// Forks sleepers until fork fails or kCap is reached, then kills and reaps them all. The
// sleepers end themselves after 30 s should this process be killed first.
Outcome ProbeForkBomb(const Args&) {
  constexpr size_t kCap = 100000;
  std::vector<pid_t> children;
  children.reserve(kCap);
  int err = 0;
  while (children.size() < kCap) {
    pid_t pid = fork();
    if (pid < 0) {
      err = errno;
      break;
    }
    if (pid == 0) {
      alarm(30);
      for (;;) pause();
    }
    children.push_back(pid);
  }
  Info("forks=" + std::to_string(children.size()));
  for (pid_t pid : children) kill(pid, SIGKILL);
  for (pid_t pid : children) {
    while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  return err != 0 ? Denied(err) : Allowed();
}

// Maps and touches 1 MiB chunks up to the target; a memory limit shows as SIGKILL (OOM) or,
// under RLIMIT_AS, as denied ENOMEM.
Outcome ProbeMemoryBomb(const Args& args) {
  long target_mib = 1024;
  if (!args.empty() && !ParseLong(args[0], 1, 1L << 30, &target_mib)) return BadUsage();
  constexpr size_t kChunk = 1 << 20;
  for (long mib = 1; mib <= target_mib; ++mib) {
    void* chunk = mmap(nullptr, kChunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (chunk == MAP_FAILED) {
      int err = errno;
      Info("touched=" + std::to_string(mib - 1));
      return DeniedAt("mmap", err);
    }
    // Volatile stores: the compiler may not drop writes to memory nobody reads back.
    volatile char* bytes = static_cast<char*>(chunk);
    for (size_t off = 0; off < kChunk; off += 4096) bytes[off] = 1;
    if (mib % 64 == 0 || mib == target_mib) Info("touched=" + std::to_string(mib));
  }
  return Allowed();
}

// Evaders end themselves after an hour, so a broken sandbox cannot leave them on a CI host
// for good; the deadline tests check far sooner than that.
constexpr unsigned kEvaderLifetimeSeconds = 3600;

[[noreturn]] void EvadeForever(bool stop_self) {
  IgnoreTermination();
  alarm(kEvaderLifetimeSeconds);
  if (stop_self) kill(getpid(), SIGSTOP);
  for (;;) pause();
}

// Double fork: the grandchild starts its own session and is reparented away from the probe.
pid_t SpawnDetachedEvader() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return -1;
  pid_t mid = fork();
  if (mid == 0) {
    pid_t grandchild = fork();
    if (grandchild == 0) {
      setsid();
      EvadeForever(false);
    }
    if (write(fds[1], &grandchild, sizeof grandchild) != sizeof grandchild) _exit(1);
    _exit(0);
  }
  close(fds[1]);
  pid_t grandchild = -1;
  if (mid > 0 && ReadUpTo(fds[0], reinterpret_cast<char*>(&grandchild), sizeof grandchild) !=
                     sizeof grandchild) {
    grandchild = -1;
  }
  close(fds[0]);
  if (mid > 0) ReapOrDie(mid);
  return grandchild;
}

// Never prints RESULT and never exits on its own: ignores SIGTERM/SIGINT/SIGHUP and leaves a
// setsid() grandchild and a self-stopped child behind. The caller checks that the deadline
// removed all three (pids printed are as seen inside the sandbox's pid namespace).
Outcome ProbeDeadlineEvade(const Args&) {
  IgnoreTermination();
  alarm(kEvaderLifetimeSeconds);
  Info("pid=" + std::to_string(getpid()) + " role=main");
  Info("pid=" + std::to_string(SpawnDetachedEvader()) + " role=setsid-grandchild");
  pid_t stopped = fork();
  if (stopped == 0) EvadeForever(true);
  Info("pid=" + std::to_string(stopped) + " role=stopped-child");
  Info("evaders started");
  for (;;) pause();
}

// ---------------------------------------------------------------------------------------------
// Inherited state: fds, environment, other processes.

// Allowed if any fd above 2 is open (a leak from the supervisor). Each is listed with its
// target. Host control: whatever the shell leaks; usually denied EBADF.
Outcome ProbeFds(const Args&) {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return DeniedAt("opendir", errno);
  std::vector<int> fds;
  long fd;
  for (dirent* entry; (entry = readdir(dir)) != nullptr;) {
    if (ParseLong(entry->d_name, 0, INT_MAX, &fd) && fd != dirfd(dir)) fds.push_back(fd);
  }
  closedir(dir);
  std::sort(fds.begin(), fds.end());
  std::string list;
  for (int n : fds) list += (list.empty() ? "" : ",") + std::to_string(n);
  Info("fds=" + list);
  bool leaked = false;
  for (int n : fds) {
    if (n <= 2) continue;
    leaked = true;
    char target[4096] = {};
    std::string link = "/proc/self/fd/" + std::to_string(n);
    if (readlink(link.c_str(), target, sizeof target - 1) < 0) strcpy(target, "?");
    Info("fd " + std::to_string(n) + " -> " + target);
  }
  return leaked ? Allowed() : Denied(EBADF);
}

// Reopens and chdirs through /proc/self/fd/N (the runc CVE-2024-21626 pattern for a leaked
// directory fd). Allowed if either works; the open's errno otherwise.
Outcome ProbeOpenFdPath(const Args& args) {
  long n;
  if (!ParseLong(args[0], 0, INT_MAX, &n)) return BadUsage();
  std::string path = "/proc/self/fd/" + args[0];
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  int open_err = fd < 0 ? errno : 0;
  Info("open=" + (fd < 0 ? ErrnoName(open_err) : std::string("ok")));
  if (fd >= 0) close(fd);
  bool entered = chdir(path.c_str()) == 0;
  if (entered) {
    char cwd[4096] = {};
    Info(std::string("chdir=ok cwd=") + (getcwd(cwd, sizeof cwd) ? cwd : "?"));
  } else {
    Info("chdir=" + ErrnoName(errno));
  }
  return fd >= 0 || entered ? Allowed() : Denied(open_err);
}

// Lists variable names (not values); allowed if any NAME given is set.
Outcome ProbeEnv(const Args& names) {
  for (char** entry = environ; *entry != nullptr; ++entry) {
    std::string_view pair(*entry);
    Info("env " + std::string(pair.substr(0, pair.find('='))));
  }
  bool found = false;
  for (const std::string& name : names) {
    if (getenv(name.c_str()) != nullptr) {
      Info("present " + name);
      found = true;
    }
  }
  return found ? Allowed() : Denied(ENOENT);
}

// Signal 0 only: kill(-1, 0) succeeds if any process besides itself and init could be
// signalled, ESRCH if none. Host control: allowed.
Outcome ProbeKillAll(const Args&) { return FromRet(kill(-1, 0)); }

Outcome ProbeKillPid(const Args& args) {
  long pid;
  if (!ParseLong(args[0], 1, INT_MAX, &pid)) return BadUsage();
  return FromRet(kill(static_cast<pid_t>(pid), 0));
}

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

// ---------------------------------------------------------------------------------------------
// Alternative syscall ABIs that a filter checking only x86_64 numbers would miss.

// i386 getpid (20 in arch/x86/entry/syscalls/syscall_32.tbl) via int $0x80. Host control:
// allowed, or ENOSYS where IA32 emulation is off. A filter that kills non-x86_64 calls shows
// as SIGSYS.
Outcome ProbeInt80(const Args&) {
#if defined(__x86_64__)
  long ret = 20;
  // The compat entry clobbers r8-r11 when entered from 64-bit code.
  asm volatile("int $0x80" : "+a"(ret) : : "memory", "r8", "r9", "r10", "r11");
  int result = static_cast<int>(ret);
  Info("ret=" + std::to_string(result));
  return result < 0 && result > -4096 ? Denied(-result) : Allowed();
#else
  Info("not-x86_64");
  return Denied(ENOSYS);
#endif
}

// x32 getpid: __X32_SYSCALL_BIT (0x40000000) | 39. Host control: allowed only with
// CONFIG_X86_X32_ABI, ENOSYS otherwise.
Outcome ProbeX32(const Args&) {
  constexpr long kX32SyscallBit = 0x40000000;
  constexpr long kNrGetpid = 39;
  long ret = syscall(kX32SyscallBit | kNrGetpid);
  Outcome out = FromRet(ret);
  Info("ret=" + std::to_string(ret));
  return out;
}

// ---------------------------------------------------------------------------------------------
// Subcommand table and entry point.

constexpr ProbeSpec kProbes[] = {
    {"write-root", "", 0, 0, "create+unlink a new file in /", ProbeWriteRoot},
    {"write-path", "DIR", 1, 1, "create+unlink a new file in DIR", ProbeWritePath},
    {"read-file", "PATH", 1, 1, "open O_RDONLY and read up to 4 KiB", ProbeReadFile},
    {"open-wronly", "PATH", 1, 1, "open O_WRONLY, write nothing", ProbeOpenWronly},
    {"ptrace-parent", "", 0, 0, "PTRACE_ATTACH to the parent (or pid 1)", ProbePtraceParent},
    {"mount-tmpfs", "", 0, 0, "mount tmpfs on /tmp/zygo-probe-mnt", ProbeMountTmpfs},
    {"umount-root", "", 0, 0, "umount2 a missing path (ENOENT=reached)", ProbeUmountRoot},
    {"pivot-root", "", 0, 0, "pivot_root to missing paths (ENOENT=reached)", ProbePivotRoot},
    {"chroot-escape", "PATH", 1, 1, "chroot/chdir(..) escape, then look for PATH",
     ProbeChrootEscape},
    {"unshare-user", "", 0, 0, "unshare(CLONE_NEWUSER) in a child", ProbeUnshareUser},
    {"unshare-mount", "", 0, 0, "unshare(CLONE_NEWNS) in a child", ProbeUnshareMount},
    {"unshare-net", "", 0, 0, "unshare(CLONE_NEWNET) in a child", ProbeUnshareNet},
    {"unshare-pid", "", 0, 0, "unshare(CLONE_NEWPID) in a child", ProbeUnsharePid},
    {"unshare-cgroup", "", 0, 0, "unshare(CLONE_NEWCGROUP) in a child", ProbeUnshareCgroup},
    {"unshare-ipc", "", 0, 0, "unshare(CLONE_NEWIPC) in a child", ProbeUnshareIpc},
    {"unshare-uts", "", 0, 0, "unshare(CLONE_NEWUTS) in a child", ProbeUnshareUts},
    {"clone-newuser", "", 0, 0, "raw clone(CLONE_NEWUSER)", ProbeCloneNewuser},
    {"clone3-newuser", "", 0, 0, "raw clone3(CLONE_NEWUSER)", ProbeClone3Newuser},
    {"clone3-plain", "", 0, 0, "raw clone3 without namespace flags", ProbeClone3Plain},
    {"setns", "NSPATH", 1, 1, "open NSPATH and setns() in a child", ProbeSetns},
    {"add-key", "", 0, 0, "add_key to the process keyring", ProbeAddKey},
    {"keyctl-join", "", 0, 0, "keyctl(KEYCTL_JOIN_SESSION_KEYRING)", ProbeKeyctlJoin},
    {"bpf", "", 0, 0, "bpf(BPF_PROG_LOAD) with an empty attr", ProbeBpf},
    {"perf-event-open", "", 0, 0, "software perf counter on self", ProbePerfEventOpen},
    {"io-uring-setup", "", 0, 0, "io_uring_setup(1)", ProbeIoUringSetup},
    {"userfaultfd", "", 0, 0, "userfaultfd(O_CLOEXEC)", ProbeUserfaultfd},
    {"open-by-handle-at", "", 0, 0, "open_by_handle_at with a forged handle", ProbeOpenByHandleAt},
    {"kexec-load", "", 0, 0, "kexec_load with invalid flags (EINVAL=reached)", ProbeKexecLoad},
    {"finit-module", "", 0, 0, "finit_module(-1) (EBADF=reached)", ProbeFinitModule},
    {"init-module", "", 0, 0, "init_module of 0 bytes (ENOEXEC=reached)", ProbeInitModule},
    {"reboot", "", 0, 0, "reboot with bad magic (EINVAL=reached)", ProbeReboot},
    {"tiocsti", "", 0, 0, "TIOCSTI one space into fd 0 (needs a pty)", ProbeTiocsti},
    {"tiocsti-high", "", 0, 0, "TIOCSTI with the high 32 bits set", ProbeTiocstiHigh},
    {"mknod", "", 0, 0, "mknod a /dev/null twin in /tmp", ProbeMknod},
    {"dev-mem", "", 0, 0, "open /dev/mem O_RDONLY", ProbeDevMem},
    {"proc-sys-write", "", 0, 0, "open /proc/sys/kernel/hostname O_WRONLY", ProbeProcSysWrite},
    {"sysrq-write", "", 0, 0, "open /proc/sysrq-trigger O_WRONLY", ProbeSysrqWrite},
    {"read-masked", "PATH", 1, 1, "read a /proc file; allowed if non-empty", ProbeReadMasked},
    {"caps", "", 0, 0, "any capability in CapPrm/CapEff/CapBnd/CapAmb", ProbeCaps},
    {"whoami", "", 0, 0, "euid 0 with effective capabilities", ProbeWhoami},
    {"setuid-gain", "PATH", 1, 1, "exec setuid PATH whoami", ProbeSetuidGain},
    {"fork-bomb", "", 0, 0, "fork until refused (cap 100000)", ProbeForkBomb},
    {"memory-bomb", "[MIB]", 0, 1, "touch MIB MiB (default 1024)", ProbeMemoryBomb},
    {"deadline-evade", "", 0, 0, "ignore SIGTERM, leave evaders, never exit", ProbeDeadlineEvade},
    {"fds", "", 0, 0, "any inherited fd above 2", ProbeFds},
    {"open-fd-path", "N", 1, 1, "open and chdir /proc/self/fd/N", ProbeOpenFdPath},
    {"env", "[NAME...]", 0, kAnyCount, "list variable names; any NAME set", ProbeEnv},
    {"kill-all", "", 0, 0, "kill(-1, 0)", ProbeKillAll},
    {"kill-pid", "PID", 1, 1, "kill(PID, 0)", ProbeKillPid},
    {"interfaces", "", 0, 0, "any network interface besides lo", ProbeInterfaces},
    {"connect-tcp", "HOST PORT", 2, 2, "TCP connect to a numeric HOST, 1 s timeout",
     ProbeConnectTcp},
    {"connect-abstract", "NAME", 1, 1, "connect to abstract unix socket @NAME",
     ProbeConnectAbstract},
    {"int80", "", 0, 0, "i386 getpid via int $0x80", ProbeInt80},
    {"x32", "", 0, 0, "x32 getpid", ProbeX32},
    {"hostname-set", "", 0, 0, "sethostname to the current name", ProbeHostnameSet},
    {"cgroup-visible", "", 0, 0, "any cgroup filesystem visible", ProbeCgroupVisible},
};

void PrintUsage(FILE* out) {
  fprintf(out,
          "usage: escape_probe <subcommand> [args]\n"
          "       escape_probe list | --help\n"
          "Prints INFO lines, then 'RESULT <subcommand> allowed' or\n"
          "'RESULT <subcommand> denied <ERRNO>', and exits 0.\n\nsubcommands:\n");
  for (std::span<const ProbeSpec> table : {std::span<const ProbeSpec>(kProbes), TenantProbes()}) {
    for (const ProbeSpec& spec : table) {
      fprintf(out, "  %-18.*s %-10.*s %.*s\n", static_cast<int>(spec.name.size()), spec.name.data(),
              static_cast<int>(spec.arg_usage.size()), spec.arg_usage.data(),
              static_cast<int>(spec.description.size()), spec.description.data());
    }
  }
}

const ProbeSpec* FindProbe(std::string_view name) {
  for (const ProbeSpec& spec : kProbes) {
    if (spec.name == name) return &spec;
  }
  for (const ProbeSpec& spec : TenantProbes()) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

int BadUsageFor(const ProbeSpec& spec) {
  fprintf(stderr, "usage: escape_probe %.*s %.*s\n", static_cast<int>(spec.name.size()),
          spec.name.data(), static_cast<int>(spec.arg_usage.size()), spec.arg_usage.data());
  return 2;
}

int Main(int argc, char** argv) {
  std::string_view command = argc >= 2 ? argv[1] : "";
  if (command == "--help" || command == "-h") {
    PrintUsage(stdout);
    return 0;
  }
  if (command == "list") {
    for (std::span<const ProbeSpec> table : {std::span<const ProbeSpec>(kProbes), TenantProbes()}) {
      for (const ProbeSpec& spec : table) {
        printf("%.*s\n", static_cast<int>(spec.name.size()), spec.name.data());
      }
    }
    return 0;
  }
  const ProbeSpec* spec = FindProbe(command);
  if (spec == nullptr) {
    if (!command.empty()) fprintf(stderr, "escape_probe: unknown subcommand '%s'\n", argv[1]);
    PrintUsage(stderr);
    return 2;
  }
  Args args(argv + 2, argv + argc);
  if (args.size() < spec->min_args || args.size() > spec->max_args) return BadUsageFor(*spec);
  Outcome out = spec->fn(args);
  if (out.kind == Outcome::Kind::kBadUsage) return BadUsageFor(*spec);
  if (out.kind == Outcome::Kind::kAllowed) {
    printf("RESULT %s allowed\n", argv[1]);
  } else {
    printf("RESULT %s denied %s\n", argv[1], ErrnoName(out.err).c_str());
  }
  fflush(stdout);
  return 0;
}

}  // namespace
}  // namespace zygo::security_tests

int main(int argc, char** argv) { return zygo::security_tests::Main(argc, argv); }
