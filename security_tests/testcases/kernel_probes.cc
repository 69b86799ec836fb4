// Escape probe subcommands (escape_probe.cc): kernel attack surface a sandbox should not reach at
// all, and the syscall ABIs a filter checking only x86_64 numbers would miss.
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/io_uring.h>
#include <linux/kexec.h>
#include <linux/keyctl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <string>

#include "security_tests/testcases/escape_probes.h"
#include "security_tests/testcases/probe_support.h"

namespace zygo::security_tests {
namespace {

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

constexpr ProbeSpec kProbes[] = {
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
    {"int80", "", 0, 0, "i386 getpid via int $0x80", ProbeInt80},
    {"x32", "", 0, 0, "x32 getpid", ProbeX32},
};

}  // namespace

std::span<const ProbeSpec> KernelProbes() { return kProbes; }

}  // namespace zygo::security_tests
