#include "core/seccomp_policy.h"

#include <errno.h>
#include <linux/audit.h>
#include <sched.h>
#include <seccomp.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "core/base/sys/seccomp.h"
#include "core/base/unique_fd.h"
#include "core/seccomp_argument_rules.h"

namespace zygo::core {
namespace {

// Close to Docker's default profile, minus everything that reaches the host kernel's
// riskier surfaces: mount APIs, namespaces, keyrings, bpf, perf, io_uring,
// userfaultfd, ptrace, handles, modules, kexec, reboot, clock and hostname setters.
// clang-format off
constexpr const char* kAllowedSyscalls[] = {
    "accept", "accept4", "access", "alarm", "arch_prctl", "bind", "brk", "capget",
    "capset", "chdir", "chown", "clock_getres", "clock_gettime", "clock_nanosleep",
    "close", "close_range", "connect", "copy_file_range", "creat", "dup", "dup2",
    "dup3", "epoll_create", "epoll_create1", "epoll_ctl", "epoll_pwait", "epoll_pwait2",
    "epoll_wait", "eventfd", "eventfd2", "execve", "execveat", "exit", "exit_group",
    "faccessat", "faccessat2", "fadvise64", "fallocate", "fchdir", "fchown", "fchownat",
    "fcntl", "fdatasync", "fgetxattr", "flistxattr", "flock", "fork", "fremovexattr",
    "fsetxattr", "fstat", "fstatfs", "fsync", "ftruncate", "futex", "futex_waitv",
    "get_robust_list", "getcpu", "getcwd", "getdents", "getdents64", "getegid",
    "geteuid", "getgid", "getgroups", "getitimer", "getpeername", "getpgid", "getpgrp",
    "getpid", "getppid", "getpriority", "getrandom", "getresgid", "getresuid",
    "getrlimit", "getrusage", "getsid", "getsockname", "getsockopt", "gettid",
    "gettimeofday", "getuid", "getxattr", "inotify_add_watch", "inotify_init",
    "inotify_init1", "inotify_rm_watch", "ioctl", "ioprio_get", "kill",
    "landlock_add_rule", "landlock_create_ruleset", "landlock_restrict_self", "lchown",
    "lgetxattr", "link", "linkat", "listen", "listxattr", "llistxattr", "lremovexattr",
    "lseek", "lsetxattr", "lstat", "madvise", "membarrier", "memfd_create", "mincore",
    "mkdir", "mkdirat", "mlock", "mlock2", "mlockall", "mmap", "mprotect",
    "mq_getsetattr", "mq_notify", "mq_open", "mq_timedreceive", "mq_timedsend",
    "mq_unlink", "mremap", "msgctl", "msgget", "msgrcv", "msgsnd", "msync", "munlock",
    "munlockall", "munmap", "nanosleep", "newfstatat", "open", "openat", "openat2",
    "pause", "pidfd_open", "pidfd_send_signal", "pipe", "pipe2", "poll", "ppoll",
    "prctl", "pread64", "preadv", "preadv2", "prlimit64", "pselect6", "pwrite64",
    "pwritev", "pwritev2", "read", "readahead", "readlink", "readlinkat", "readv",
    "recvfrom", "recvmmsg", "recvmsg", "remap_file_pages", "removexattr", "rename",
    "renameat", "renameat2", "restart_syscall", "rmdir", "rseq", "rt_sigaction",
    "rt_sigpending", "rt_sigprocmask", "rt_sigqueueinfo", "rt_sigreturn",
    "rt_sigsuspend", "rt_sigtimedwait", "rt_tgsigqueueinfo", "sched_get_priority_max",
    "sched_get_priority_min", "sched_getaffinity", "sched_getattr", "sched_getparam",
    "sched_getscheduler", "sched_rr_get_interval", "sched_setaffinity", "sched_setattr",
    "sched_setparam", "sched_setscheduler", "sched_yield", "seccomp", "select",
    "semctl", "semget", "semop", "semtimedop", "sendfile", "sendmmsg", "sendmsg",
    "sendto", "set_robust_list", "set_tid_address", "setfsgid", "setfsuid", "setgid",
    "setgroups", "setitimer", "setpgid", "setpriority", "setregid", "setresgid",
    "setresuid", "setreuid", "setsid", "setsockopt", "setuid", "shmat", "shmctl",
    "shmdt", "shmget", "shutdown", "sigaltstack", "signalfd", "signalfd4", "splice",
    "stat", "statfs", "statx", "symlink", "symlinkat", "sync", "sync_file_range",
    "syncfs", "sysinfo", "tee", "tgkill", "time", "timer_create", "timer_delete",
    "timer_getoverrun", "timer_gettime", "timer_settime", "timerfd_create",
    "timerfd_gettime", "timerfd_settime", "times", "tkill", "truncate", "umask",
    "uname", "unlink", "unlinkat", "utime", "utimensat", "utimes", "vfork", "vmsplice",
    "wait4", "waitid", "write", "writev",
};
// clang-format on

// Named in --dry-run so a reader sees what the allowlist leaves out.
constexpr const char* kDeniedExamples[] = {
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "unshare (all but USER|NS)",
    "setns",
    "clone3 (ENOSYS)",
    "keyctl",
    "add_key",
    "bpf",
    "perf_event_open",
    "io_uring_setup",
    "userfaultfd",
    "ptrace",
    "open_by_handle_at",
    "kexec_load",
    "finit_module",
    "reboot",
    "process_vm_readv",
    "sethostname",
    "fsopen",
    "move_mount",
};

// kRuntimeZygote's programs name this in place of the unshare entry above.
constexpr char kRuntimeUnshareExample[] =
    "unshare (all but USER|NS, USER|NS|PID|NET|IPC|UTS, CGROUP)";

struct ContextDeleter {
  void operator()(scmp_filter_ctx ctx) const { seccomp_release(ctx); }
};
using Context = std::unique_ptr<void, ContextDeleter>;

absl::Status Check(int rc, absl::string_view what) {
  return rc < 0 ? base::ErrnoStatus(-rc, absl::StrCat("libseccomp ", what)) : absl::OkStatus();
}

// seccomp_export_bpf writes to an fd (libseccomp 2.5 has no in-memory export).
absl::StatusOr<std::vector<struct sock_filter>> Export(scmp_filter_ctx ctx) {
  base::UniqueFd memfd(memfd_create("zygo-seccomp", MFD_CLOEXEC));
  if (!memfd.valid()) return base::ErrnoStatus(errno, "memfd_create(zygo-seccomp)");
  ZYGO_RETURN_IF_ERROR(Check(seccomp_export_bpf(ctx, memfd.get()), "seccomp_export_bpf"));
  off_t size = lseek(memfd.get(), 0, SEEK_END);
  if (size <= 0 || size % sizeof(struct sock_filter) != 0) {
    return absl::InternalError("seccomp_export_bpf produced no program");
  }
  std::vector<struct sock_filter> program(size / sizeof(struct sock_filter));
  if (pread(memfd.get(), program.data(), size, 0) != size) {
    return base::ErrnoStatus(errno, "pread(seccomp program)");
  }
  return program;
}

// `refused` answers what the list does not name; `foreign_abi` a call from i386 or x32,
// whose numbers mean other syscalls: only the native ABI is in the filter.
absl::StatusOr<std::vector<struct sock_filter>> BuildAllowlist(SeccompProfile profile,
                                                               uint32_t refused,
                                                               uint32_t foreign_abi, int* allowed) {
  Context ctx(seccomp_init(refused));
  if (!ctx) return absl::InternalError("seccomp_init failed");
  ZYGO_RETURN_IF_ERROR(Check(seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, foreign_abi),
                             "set bad-arch action"));
  // A binary tree of syscall numbers instead of a linear scan: every syscall the
  // sandboxed program makes walks this filter.
  ZYGO_RETURN_IF_ERROR(
      Check(seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_OPTIMIZE, 2), "set optimize level"));
  *allowed = 0;
  for (const char* name : kAllowedSyscalls) {
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) continue;  // not a syscall on this architecture
    ZYGO_RETURN_IF_ERROR(Check(seccomp_rule_add(ctx.get(), SCMP_ACT_ALLOW, nr, 0), name));
    ++*allowed;
  }
  ZYGO_RETURN_IF_ERROR(AddArgumentCheckedRules(ctx.get(), profile, allowed));
  return Export(ctx.get());
}

absl::StatusOr<std::vector<struct sock_filter>> BuildArgumentDenials() {
  Context ctx(seccomp_init(SCMP_ACT_ALLOW));
  if (!ctx) return absl::InternalError("seccomp_init failed");
  // Foreign ABIs are the allowlist's to answer: a kill here would outrank its
  // notification, and zygo-init would never hear of the call.
  ZYGO_RETURN_IF_ERROR(Check(seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ALLOW),
                             "set bad-arch action"));
  // The kernel takes ioctl's request as an unsigned int, so a caller can set the
  // upper 32 bits to slip past a 64-bit compare; match the low 32 bits only.
  for (unsigned long request :
       {static_cast<unsigned long>(TIOCSTI), static_cast<unsigned long>(TIOCLINUX)}) {
    ZYGO_RETURN_IF_ERROR(
        Check(seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
                               SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffULL, request)),
              "ioctl"));
  }
  return Export(ctx.get());
}

}  // namespace

absl::StatusOr<SeccompPrograms> BuildSeccompPrograms(SeccompProfile profile) {
  SeccompPrograms programs;
  int allowed = 0;
  ZYGO_ASSIGN_OR_RETURN(programs.allowlist,
                        BuildAllowlist(profile, SCMP_ACT_ERRNO(EPERM), SCMP_ACT_NOTIFY, &allowed));
  ZYGO_ASSIGN_OR_RETURN(
      programs.allowlist_without_listener,
      BuildAllowlist(profile, SCMP_ACT_ERRNO(EPERM), SCMP_ACT_KILL_PROCESS, &allowed));
  ZYGO_ASSIGN_OR_RETURN(programs.explaining_allowlist,
                        BuildAllowlist(profile, SCMP_ACT_NOTIFY, SCMP_ACT_NOTIFY, &allowed));
  programs.allowed_syscalls = allowed;
  ZYGO_ASSIGN_OR_RETURN(programs.argument_denials, BuildArgumentDenials());
  programs.denied_examples.assign(std::begin(kDeniedExamples), std::end(kDeniedExamples));
  if (profile == SeccompProfile::kRuntimeZygote) {
    for (std::string& example : programs.denied_examples) {
      if (absl::StartsWith(example, "unshare ")) example = kRuntimeUnshareExample;
    }
  }
  return programs;
}

absl::StatusOr<std::vector<struct sock_filter>> BuildFunctionZygoteSealFilter() {
  Context ctx(seccomp_init(SCMP_ACT_ALLOW));
  if (!ctx) return absl::InternalError("seccomp_init failed");
  // Foreign ABIs are the runtime allowlist's to answer (as for the argument denials):
  // libseccomp also sends x32 numbers of a native-only filter to the bad-arch action.
  ZYGO_RETURN_IF_ERROR(Check(seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ALLOW),
                             "set bad-arch action"));
  // The whole argument: stricter than the allowlist's low 32 bits, which is fine here.
  ZYGO_RETURN_IF_ERROR(Check(
      seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 1,
                       SCMP_A0(SCMP_CMP_NE, static_cast<uint64_t>(CLONE_NEWUSER | CLONE_NEWNS))),
      "unshare"));
  return Export(ctx.get());
}

std::string SeccompProgramBytes(const std::vector<struct sock_filter>& program) {
  return std::string(reinterpret_cast<const char*>(program.data()),
                     program.size() * sizeof(struct sock_filter));
}

std::string SyscallName(uint32_t arch, int nr) {
  uint32_t token = arch == AUDIT_ARCH_I386          ? SCMP_ARCH_X86
                   : base::sys::IsX32Call(arch, nr) ? SCMP_ARCH_X32
                                                    : SCMP_ARCH_NATIVE;
  char* name = seccomp_syscall_resolve_num_arch(token, nr);
  if (name == nullptr) return absl::StrCat("syscall ", nr);
  std::string result(name);
  free(name);
  return result;
}

std::string ArchName(uint32_t arch, int nr) {
  if (arch == AUDIT_ARCH_I386) return "i386";
  if (arch == AUDIT_ARCH_X86_64) {
    return base::sys::IsX32Call(arch, nr) ? "x32" : "x86_64";
  }
  return absl::StrCat("0x", absl::Hex(arch));
}

namespace {

int Install(const std::vector<struct sock_filter>& program, bool with_listener) {
  struct sock_fprog fprog;
  fprog.len = static_cast<unsigned short>(program.size());
  fprog.filter = const_cast<struct sock_filter*>(program.data());
  return with_listener ? base::sys::RawSeccompSetFilterWithListener(&fprog)
                       : base::sys::RawSeccompSetFilter(&fprog);
}

}  // namespace

ChildFailure InstallSeccompInChild(const SeccompPrograms& programs, bool explain,
                                   int* listener_fd) {
  *listener_fd = -1;
  int rc = Install(programs.argument_denials, /*with_listener=*/false);
  if (rc < 0) return {LaunchStep::kSeccomp, -rc};
  rc = Install(explain ? programs.explaining_allowlist : programs.allowlist,
               /*with_listener=*/true);
  if (rc == -EBUSY && !explain) {
    rc = Install(programs.allowlist_without_listener, /*with_listener=*/false);
    if (rc < 0) return {LaunchStep::kSeccomp, -rc};
    return ChildFailure::Ok();
  }
  if (rc < 0) return {LaunchStep::kSeccomp, -rc, explain ? 1 : 0};
  *listener_fd = rc;
  return ChildFailure::Ok();
}

}  // namespace zygo::core
