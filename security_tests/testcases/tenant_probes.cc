// Each probe's comment says what an unsandboxed kernel answers. Every attempt is harmless
// if it succeeds: memory and environments are only read, a forged report record reaches
// only the run that forged it, files are made in a directory the test gives, and every
// counter held is released when the probe exits.
#include "security_tests/testcases/tenant_probes.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <mqueue.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

namespace zygo::security_tests {
namespace {

// ---------------------------------------------------------------------------------------------
// What another process holds.

// "self", "child" (a dumpable child of this probe holding NEEDLE in its heap) or a pid.
// (In "self" and "child", NEEDLE is found in any case: the probe's argv holds it.)
pid_t TargetPid(const std::string& which, const std::string& needle, pid_t* child) {
  *child = -1;
  if (which == "self") return getpid();
  if (which == "child") {
    int ready[2];
    if (pipe(ready) != 0) return -1;
    pid_t pid = fork();
    if (pid == 0) {
      // A copy on the heap, as a handler holds a secret.
      std::string* held = new std::string(needle);
      (void)held;
      close(ready[0]);
      (void)!write(ready[1], "r", 1);
      pause();
      _exit(0);
    }
    close(ready[1]);
    char byte;
    (void)!read(ready[0], &byte, 1);
    close(ready[0]);
    *child = pid;
    return pid;
  }
  long pid = 0;
  return ParseLong(which, 1, 1 << 22, &pid) ? static_cast<pid_t>(pid) : -1;
}

void EndChild(pid_t child) {
  if (child <= 0) return;
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
}

// Reads every readable mapping of /proc/PID/mem looking for NEEDLE. Allowed: found.
// Denied EACCES/EPERM: maps or mem could not be opened (what a non-dumpable process
// answers). Denied ENODATA: the memory was read, and NEEDLE is not in it.
Outcome ProbeScanMem(const Args& args) {
  pid_t child;
  pid_t pid = TargetPid(args[0], args[1], &child);
  if (pid <= 0) return BadUsage();
  const std::string& needle = args[1];
  std::string maps;
  std::string base = "/proc/" + std::to_string(pid);
  Outcome out = Denied(ENODATA);
  int mem = -1;
  if (!ReadWholeFile((base + "/maps").c_str(), &maps)) {
    out = DeniedAt("read maps", errno);
  } else if ((mem = open((base + "/mem").c_str(), O_RDONLY | O_CLOEXEC)) < 0) {
    out = DeniedAt("open mem", errno);
  } else {
    size_t regions = 0, bytes = 0;
    for (size_t at = 0; at < maps.size();) {
      size_t eol = maps.find('\n', at);
      std::string line = maps.substr(at, eol - at);
      at = eol == std::string::npos ? maps.size() : eol + 1;
      unsigned long start = 0, end = 0;
      char perms[5] = {};
      if (sscanf(line.c_str(), "%lx-%lx %4s", &start, &end, perms) != 3 || perms[0] != 'r') {
        continue;
      }
      if (line.find("[vvar") != std::string::npos) continue;
      std::vector<char> buffer(end - start);
      ssize_t n = pread(mem, buffer.data(), buffer.size(), static_cast<off_t>(start));
      if (n <= 0) continue;
      ++regions;
      bytes += static_cast<size_t>(n);
      if (std::string_view(buffer.data(), static_cast<size_t>(n)).find(needle) !=
          std::string_view::npos) {
        out = Allowed();
        break;
      }
    }
    Info("regions=" + std::to_string(regions) + " bytes=" + std::to_string(bytes));
  }
  if (mem >= 0) close(mem);
  EndChild(child);
  return out;
}

// Reads /proc/PID/FILE (environ, cmdline, ...). Allowed: NEEDLE is in it. Denied ENODATA:
// read, without NEEDLE; otherwise the errno of the open.
Outcome ProbeProcFileHas(const Args& args) {
  pid_t child;
  pid_t pid = TargetPid(args[0], args[2], &child);
  if (pid <= 0) return BadUsage();
  std::string text;
  std::string path = "/proc/" + std::to_string(pid) + "/" + args[1];
  Outcome out = ReadWholeFile(path.c_str(), &text)
                    ? (text.find(args[2]) != std::string::npos ? Allowed() : Denied(ENODATA))
                    : DeniedAt("read " + path, errno);
  EndChild(child);
  return out;
}

// Writes a forged zygo report record ({kind 1 = setup failed, step 5, EPERM, 0}) into each
// of /proc/PID/fd/3..15 that opens for writing. Allowed: at least one took it (so zygo would
// report a setup failure for a command that ran). Denied: the errno of the first open.
Outcome ProbeForgeReport(const Args& args) {
  long pid = 0;
  if (args[0] != "self" && !ParseLong(args[0], 1, 1 << 22, &pid)) return BadUsage();
  int own[2] = {-1, -1};
  if (args[0] == "self") {
    // The control: a pipe of our own, reached the same way.
    if (pipe(own) != 0) return DeniedAt("pipe", errno);
    pid = getpid();
  }
  const int32_t record[4] = {1, 5, EPERM, 0};
  int first_errno = 0;
  bool written = false;
  for (int fd = 3; fd <= 15 && !written; ++fd) {
    std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
    int target = open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (target < 0) {
      if (first_errno == 0 && errno != ENOENT) first_errno = errno;
      continue;
    }
    written = write(target, record, sizeof(record)) == sizeof(record);
    Info("wrote a record into " + path);
    close(target);
  }
  if (own[0] >= 0) {
    close(own[0]);
    close(own[1]);
  }
  if (written) return Allowed();
  return Denied(first_errno != 0 ? first_errno : ENOENT);
}

// ---------------------------------------------------------------------------------------------
// Socket families.

struct SocketKind {
  const char* name;
  int family, type, protocol;
};
constexpr SocketKind kSocketKinds[] = {
    {"unix", AF_UNIX, SOCK_STREAM, 0},
    {"inet", AF_INET, SOCK_STREAM, 0},
    {"inet6", AF_INET6, SOCK_DGRAM, 0},
    {"netlink-route", AF_NETLINK, SOCK_RAW, NETLINK_ROUTE},
    {"netlink-uevent", AF_NETLINK, SOCK_RAW, NETLINK_KOBJECT_UEVENT},
    {"netlink-audit", AF_NETLINK, SOCK_RAW, NETLINK_AUDIT},
    {"vsock", 40 /* AF_VSOCK */, SOCK_STREAM, 0},
    {"packet", AF_PACKET, SOCK_DGRAM, 0},
    {"alg", 38 /* AF_ALG */, SOCK_SEQPACKET, 0},
    {"xdp", 44 /* AF_XDP */, SOCK_RAW, 0},
    {"key", 15 /* PF_KEY */, SOCK_RAW, 2 /* PF_KEY_V2 */},
    {"bluetooth", 31 /* AF_BLUETOOTH */, SOCK_RAW, 0},
};

// socket(FAMILY) as raw syscall; "-high" sets the upper 32 bits of the family argument,
// which the kernel ignores (it takes an int). Allowed: the socket was made (then closed).
Outcome ProbeSocket(const Args& args) {
  std::string name = args[0];
  bool high = name.size() > 5 && name.compare(name.size() - 5, 5, "-high") == 0;
  if (high) name.resize(name.size() - 5);
  for (const SocketKind& kind : kSocketKinds) {
    if (name != kind.name) continue;
    unsigned long family = static_cast<unsigned long>(kind.family) | (high ? 1UL << 32 : 0);
    return FromFd(syscall(SYS_socket, family, kind.type | SOCK_CLOEXEC, kind.protocol));
  }
  return BadUsage();
}

// socketpair(AF_VSOCK or AF_UNIX).
Outcome ProbeSocketpair(const Args& args) {
  int family = args[0] == "unix" ? AF_UNIX : args[0] == "inet" ? AF_INET : -1;
  if (family < 0) return BadUsage();
  int pair[2];
  if (socketpair(family, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) return Denied(errno);
  close(pair[0]);
  close(pair[1]);
  return Allowed();
}

// ---------------------------------------------------------------------------------------------
// Files a sandbox must not make.

// Makes DIR/NAME (0755), then tries chmod, fchmod and fchmodat with MODE (octal, e.g. 4755).
// Allowed: any of them set the mode. The file is removed afterwards unless KEEP is given.
Outcome ProbeChmodSetId(const Args& args) {
  std::string path = args[0] + "/" + UniqueName("setid");
  long mode = strtol(args[1].c_str(), nullptr, 8);
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
  if (fd < 0) return DeniedAt("create " + path, errno);
  Info("path=" + path);
  int first_errno = 0;
  auto attempt = [&](const char* how, int rc) {
    if (rc == 0) {
      Info(std::string(how) + " allowed");
      return true;
    }
    if (first_errno == 0) first_errno = errno;
    Info(std::string(how) + " " + ErrnoName(errno));
    return false;
  };
  bool set = attempt("chmod", chmod(path.c_str(), static_cast<mode_t>(mode)));
  set = attempt("fchmod", fchmod(fd, static_cast<mode_t>(mode))) || set;
  set = attempt("fchmodat", fchmodat(AT_FDCWD, path.c_str(), static_cast<mode_t>(mode), 0)) || set;
  close(fd);
  struct stat st {};
  stat(path.c_str(), &st);
  Info("mode=" + std::to_string(st.st_mode & 07777));
  if (args.size() < 3) unlink(path.c_str());
  return set ? Allowed() : Denied(first_errno);
}

// open(O_CREAT) with mode 04755, then one write, as a copy of a binary would: allowed if the
// file still has S_ISUID afterwards (the kernel clears it on a write without CAP_FSETID).
Outcome ProbeCreateSetuid(const Args& args) {
  std::string path = args[0] + "/" + UniqueName("created-setuid");
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 04755);
  if (fd < 0) return DeniedAt("create " + path, errno);
  struct stat st {};
  fstat(fd, &st);
  Info("mode after create=" + std::to_string(st.st_mode & 07777));
  (void)!write(fd,
               "\x7f"
               "ELF",
               4);
  fstat(fd, &st);
  close(fd);
  Info("mode after write=" + std::to_string(st.st_mode & 07777));
  unlink(path.c_str());
  return (st.st_mode & S_ISUID) != 0 ? Allowed() : Denied(EPERM);
}

// mknod DIR/NAME as TYPE: "fifo", "char" (1:3, /dev/null's numbers), "block" (7:0, loop0).
Outcome ProbeMknodType(const Args& args) {
  std::string path = args[0] + "/" + UniqueName("node");
  mode_t type = args[1] == "fifo"    ? S_IFIFO
                : args[1] == "char"  ? S_IFCHR
                : args[1] == "block" ? S_IFBLK
                                     : 0;
  if (type == 0) return BadUsage();
  dev_t dev = type == S_IFCHR ? makedev(1, 3) : type == S_IFBLK ? makedev(7, 0) : 0;
  if (mknod(path.c_str(), type | 0600, dev) != 0) return Denied(errno);
  unlink(path.c_str());
  return Allowed();
}

// setxattr security.capability (a v2 xattr granting CAP_SETUID) on a new file in DIR:
// file capabilities would make the file a privilege gain for whoever runs it on the host.
Outcome ProbeSetFileCaps(const Args& args) {
  std::string path = args[0] + "/" + UniqueName("fcaps");
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
  if (fd < 0) return DeniedAt("create " + path, errno);
  close(fd);
  // struct vfs_cap_data, revision 2, effective, permitted CAP_SETUID (bit 7).
  const uint32_t caps[5] = {0x02000001, 1u << 7, 0, 0, 0};
  int rc = setxattr(path.c_str(), "security.capability", caps, sizeof(caps), 0);
  int err = errno;
  unlink(path.c_str());
  return rc == 0 ? Allowed() : Denied(err);
}

// ---------------------------------------------------------------------------------------------
// Counters the kernel does not namespace.

// Makes up to MAX inotify instances (one watch each on /), touches READY (a path the test
// watches for), then holds them until stdin reaches EOF. Allowed: all MAX were made; denied:
// the errno that stopped it, with INFO count=N.
Outcome ProbeInotifyHold(const Args& args) {
  long max = 0;
  if (!ParseLong(args[0], 1, 100000, &max)) return BadUsage();
  std::vector<int> held;
  int err = 0;
  while (static_cast<long>(held.size()) < max) {
    int fd = inotify_init1(IN_CLOEXEC);
    if (fd < 0) {
      err = errno;
      break;
    }
    held.push_back(fd);
  }
  Info("count=" + std::to_string(held.size()));
  if (args.size() > 1) {
    int ready = open(args[1].c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (ready >= 0) close(ready);
    char byte;
    while (read(0, &byte, 1) > 0) {
    }
  }
  for (int fd : held) close(fd);
  return err == 0 ? Allowed() : Denied(err);
}

// Adds inotify watches on MAX new files in DIR, one instance. Allowed: all MAX were
// watched; denied: the errno that stopped it (ENOSPC at the watch limit), INFO count=N.
Outcome ProbeInotifyWatches(const Args& args) {
  long max = 0;
  if (!ParseLong(args[1], 1, 1000000, &max)) return BadUsage();
  int instance = inotify_init1(IN_CLOEXEC);
  if (instance < 0) return DeniedAt("inotify_init1", errno);
  std::string dir = args[0] + "/" + UniqueName("watched");
  if (mkdir(dir.c_str(), 0700) != 0) return DeniedAt("mkdir " + dir, errno);
  long count = 0;
  int err = 0;
  for (; count < max; ++count) {
    std::string path = dir + "/" + std::to_string(count);
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0) close(fd);
    if (inotify_add_watch(instance, path.c_str(), IN_MODIFY) < 0) {
      err = errno;
      break;
    }
  }
  close(instance);  // the watches go with it
  for (long i = 0; i <= count && i < max; ++i) unlink((dir + "/" + std::to_string(i)).c_str());
  rmdir(dir.c_str());
  Info("count=" + std::to_string(count));
  return err == 0 ? Allowed() : Denied(err);
}

// Queues up to MAX realtime signals to itself (blocked, so none is delivered): allowed if
// all were queued; denied: the errno that stopped it (EAGAIN at RLIMIT_SIGPENDING), INFO
// count=N. They are discarded when the probe exits.
Outcome ProbeSigqueueHold(const Args& args) {
  long max = 0;
  if (!ParseLong(args[0], 1, 1000000, &max)) return BadUsage();
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGRTMIN);
  sigprocmask(SIG_BLOCK, &set, nullptr);
  long count = 0;
  int err = 0;
  union sigval value = {};
  for (; count < max; ++count) {
    if (sigqueue(getpid(), SIGRTMIN, value) != 0) {
      err = errno;
      break;
    }
  }
  Info("count=" + std::to_string(count));
  return err == 0 ? Allowed() : Denied(err);
}

// Opens a POSIX message queue of MAXMSG messages of 8 KiB (its bytes are counted against
// RLIMIT_MSGQUEUE, per user across user namespaces), then unlinks it. Allowed: made.
Outcome ProbeMqueueOpen(const Args& args) {
  long maxmsg = 0;
  if (!ParseLong(args[0], 1, 1000, &maxmsg)) return BadUsage();
  struct mq_attr attr = {};
  attr.mq_maxmsg = maxmsg;
  attr.mq_msgsize = 8192;
  std::string name = "/" + UniqueName("zygo-probe-mq").substr(1);
  mqd_t queue = mq_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600, &attr);
  if (queue == static_cast<mqd_t>(-1)) return Denied(errno);
  mq_close(queue);
  mq_unlink(name.c_str());
  return Allowed();
}

// io_setup(NR) (native AIO): allowed if the context was made (then destroyed at once).
Outcome ProbeAioSetup(const Args& args) {
  long nr = 0;
  if (!ParseLong(args[0], 1, 1 << 20, &nr)) return BadUsage();
  unsigned long context = 0;
  if (syscall(SYS_io_setup, nr, &context) != 0) return Denied(errno);
  syscall(SYS_io_destroy, context);
  return Allowed();
}

// ---------------------------------------------------------------------------------------------
// Races.

// Swaps PATH_A and PATH_B (renameat2 RENAME_EXCHANGE, atomic) as fast as it can for MILLIS
// ms, or until STOP exists, an even number of times so both end where they began.
// Allowed: it swapped at all.
Outcome ProbeExchangeLoop(const Args& args) {
  long millis = 0;
  if (!ParseLong(args[2], 1, 600000, &millis)) return BadUsage();
  timespec start{}, now{};
  clock_gettime(CLOCK_MONOTONIC, &start);
  long swaps = 0;
  for (;;) {
    constexpr unsigned kRenameExchange = 1 << 1;
    if (syscall(SYS_renameat2, AT_FDCWD, args[0].c_str(), AT_FDCWD, args[1].c_str(),
                kRenameExchange) != 0) {
      return DeniedAt("renameat2(RENAME_EXCHANGE)", errno);
    }
    ++swaps;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long elapsed = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
    bool stop = elapsed >= millis || (args.size() > 3 && access(args[3].c_str(), F_OK) == 0);
    if (stop && swaps % 2 == 0) break;
  }
  Info("swaps=" + std::to_string(swaps));
  return Allowed();
}

// A child makes an i386 call (int $0x80 getpid); this process outlives it and exits 0.
Outcome ProbeInt80Child(const Args&) {
  pid_t pid = fork();
  if (pid == 0) {
    long ret;
    asm volatile("int $0x80" : "=a"(ret) : "a"(20L) : "memory");  // i386 getpid
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  Info(WIFSIGNALED(status) ? "child-killed-by-signal=" + SignalName(WTERMSIG(status))
                           : "child-exited=" + std::to_string(WEXITSTATUS(status)));
  return WIFEXITED(status) ? Allowed() : Denied(EPERM);
}

constexpr ProbeSpec kTenantProbes[] = {
    {"scan-mem", "PID|self|child NEEDLE", 2, 2, "find NEEDLE in /proc/PID/mem", ProbeScanMem},
    {"proc-file-has", "PID|self|child FILE NEEDLE", 3, 3, "find NEEDLE in /proc/PID/FILE",
     ProbeProcFileHas},
    {"forge-report", "PID|self", 1, 1, "write a zygo report record into /proc/PID/fd/3..15",
     ProbeForgeReport},
    {"socket", "FAMILY[-high]", 1, 1, "socket(FAMILY): unix inet inet6 netlink-route ...",
     ProbeSocket},
    {"socketpair", "unix|inet", 1, 1, "socketpair(FAMILY)", ProbeSocketpair},
    {"chmod-setid", "DIR MODE [KEEP]", 2, 3, "chmod/fchmod/fchmodat a new file to MODE",
     ProbeChmodSetId},
    {"create-setuid", "DIR", 1, 1, "create 04755, write: still setuid?", ProbeCreateSetuid},
    {"mknod-type", "DIR fifo|char|block", 2, 2, "mknod of TYPE in DIR", ProbeMknodType},
    {"set-file-caps", "DIR", 1, 1, "setxattr security.capability", ProbeSetFileCaps},
    {"inotify-hold", "MAX [READY]", 1, 2, "hold up to MAX inotify instances till stdin EOF",
     ProbeInotifyHold},
    {"inotify-watches", "DIR MAX", 2, 2, "inotify watches on up to MAX new files in DIR",
     ProbeInotifyWatches},
    {"sigqueue-hold", "MAX", 1, 1, "queue up to MAX realtime signals to itself", ProbeSigqueueHold},
    {"mqueue-open", "MAXMSG", 1, 1, "mq_open MAXMSG x 8 KiB messages", ProbeMqueueOpen},
    {"aio-setup", "NR", 1, 1, "io_setup(NR)", ProbeAioSetup},
    {"int80-child", "", 0, 0, "a child calls int $0x80; this one exits 0", ProbeInt80Child},
    {"exchange-loop", "PATH_A PATH_B MILLIS [STOP]", 3, 4,
     "swap two paths atomically, for MILLIS ms or until STOP exists", ProbeExchangeLoop},
};

}  // namespace

std::span<const ProbeSpec> TenantProbes() { return kTenantProbes; }

}  // namespace zygo::security_tests
