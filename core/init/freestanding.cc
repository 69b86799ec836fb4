// The few libc functions zygo-init calls, as raw system calls, and its entry point: the
// init is linked without a C library (-nostdlib), so exec'ing it costs a small static file
// (kilobytes, not glibc's 700) written once per process into a memfd and mapped per
// sandbox. Only what init_main.cc, command.cc, seccomp_listener.cc and the core/base
// headers they include use is here; anything else fails to link, which is the point.
// x86-64 and arm64. No thread, no TLS, no stack protector (the BUILD file says so), no
// errno shared with anything: one process, one thread.
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/types.h>

extern "C" {

namespace {

int errno_value = 0;

long RawSyscall(long nr, long a, long b, long c, long d, long e, long f) {
  long ret;
#if defined(__x86_64__)
  register long r10 asm("r10") = d;
  register long r8 asm("r8") = e;
  register long r9 asm("r9") = f;
  asm volatile("syscall"
               : "=a"(ret)
               : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
               : "rcx", "r11", "memory");
#elif defined(__aarch64__)
  register long x8 asm("x8") = nr;
  register long x0 asm("x0") = a;
  register long x1 asm("x1") = b;
  register long x2 asm("x2") = c;
  register long x3 asm("x3") = d;
  register long x4 asm("x4") = e;
  register long x5 asm("x5") = f;
  asm volatile("svc 0"
               : "+r"(x0)
               : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
               : "memory");
  ret = x0;
#else
#error "zygo-init's system calls are written for x86-64 and arm64"
#endif
  return ret;
}

// libc's convention: -1 and errno on failure.
long Call(long nr, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0, long f = 0) {
  long ret = RawSyscall(nr, a, b, c, d, e, f);
  if (ret < 0 && ret > -4096) {
    errno_value = static_cast<int>(-ret);
    return -1;
  }
  return ret;
}

// The kernel's struct sigaction (glibc's has a 128-byte mask; the kernel reads 8).
struct KernelSigaction {
  void* handler;
  unsigned long flags;
  void* restorer;
  unsigned long mask;
};
constexpr long kSigsetSize = 8;

}  // namespace

int* __errno_location() { return &errno_value; }

long syscall(long nr, ...) {
  va_list args;
  va_start(args, nr);
  long a = va_arg(args, long), b = va_arg(args, long), c = va_arg(args, long);
  long d = va_arg(args, long), e = va_arg(args, long), f = va_arg(args, long);
  va_end(args);
  return Call(nr, a, b, c, d, e, f);
}

ssize_t read(int fd, void* buf, size_t count) {
  return Call(SYS_read, fd, reinterpret_cast<long>(buf), static_cast<long>(count));
}

ssize_t write(int fd, const void* buf, size_t count) {
  return Call(SYS_write, fd, reinterpret_cast<long>(buf), static_cast<long>(count));
}

int close(int fd) { return static_cast<int>(Call(SYS_close, fd)); }

int open(const char* path, int flags, ...) {
  return static_cast<int>(Call(SYS_openat, AT_FDCWD, reinterpret_cast<long>(path), flags, 0));
}

int fcntl(int fd, int command, ...) {
  va_list args;
  va_start(args, command);
  long argument = va_arg(args, long);
  va_end(args);
  return static_cast<int>(Call(SYS_fcntl, fd, command, argument));
}

int prctl(int option, ...) {
  va_list args;
  va_start(args, option);
  long a = va_arg(args, long), b = va_arg(args, long), c = va_arg(args, long);
  long d = va_arg(args, long);
  va_end(args);
  return static_cast<int>(Call(SYS_prctl, option, a, b, c, d));
}

int ioctl(int fd, unsigned long request, ...) {
  va_list args;
  va_start(args, request);
  long argument = va_arg(args, long);
  va_end(args);
  return static_cast<int>(Call(SYS_ioctl, fd, static_cast<long>(request), argument));
}

int sigemptyset(sigset_t* set) {
  for (unsigned long& word : set->__val) word = 0;
  return 0;
}

int sigaddset(sigset_t* set, int sig) {
  set->__val[0] |= 1UL << (sig - 1);
  return 0;
}

int sigprocmask(int how, const sigset_t* set, sigset_t* old) {
  return static_cast<int>(Call(SYS_rt_sigprocmask, how, reinterpret_cast<long>(set),
                               reinterpret_cast<long>(old), kSigsetSize));
}

// Only SIG_DFL and SIG_IGN, and no old action: a handler would need a restorer, and the
// init installs none.
int sigaction(int sig, const struct sigaction* action, struct sigaction* old) {
  if (action == nullptr || old != nullptr ||
      (action->sa_handler != SIG_DFL && action->sa_handler != SIG_IGN)) {
    errno_value = EINVAL;
    return -1;
  }
  KernelSigaction kernel = {reinterpret_cast<void*>(action->sa_handler),
                            static_cast<unsigned long>(action->sa_flags), nullptr,
                            action->sa_mask.__val[0]};
  return static_cast<int>(
      Call(SYS_rt_sigaction, sig, reinterpret_cast<long>(&kernel), 0, kSigsetSize));
}

int signalfd(int fd, const sigset_t* mask, int flags) {
  return static_cast<int>(
      Call(SYS_signalfd4, fd, reinterpret_cast<long>(mask), kSigsetSize, flags));
}

int pipe2(int fds[2], int flags) {
  return static_cast<int>(Call(SYS_pipe2, reinterpret_cast<long>(fds), flags));
}

// clone(SIGCHLD): the arguments after the flags are all zero, so their order, which
// differs between x86-64 and arm64, does not matter.
pid_t fork() { return static_cast<pid_t>(Call(SYS_clone, SIGCHLD, 0, 0, 0, 0)); }

int execve(const char* path, char* const argv[], char* const envp[]) {
  return static_cast<int>(Call(SYS_execve, reinterpret_cast<long>(path),
                               reinterpret_cast<long>(argv), reinterpret_cast<long>(envp)));
}

int poll(struct pollfd* fds, nfds_t count, int timeout) {
  struct Timespec {
    long seconds, nanoseconds;
  } limit = {timeout / 1000, (timeout % 1000) * 1000000L};
  return static_cast<int>(Call(SYS_ppoll, reinterpret_cast<long>(fds), static_cast<long>(count),
                               timeout < 0 ? 0 : reinterpret_cast<long>(&limit), 0, kSigsetSize));
}

pid_t wait4(pid_t pid, int* status, int options, struct rusage* usage) {
  return static_cast<pid_t>(
      Call(SYS_wait4, pid, reinterpret_cast<long>(status), options, reinterpret_cast<long>(usage)));
}

int kill(pid_t pid, int sig) { return static_cast<int>(Call(SYS_kill, pid, sig)); }

[[noreturn]] void _exit(int status) {
  for (;;) RawSyscall(SYS_exit_group, status, 0, 0, 0, 0, 0);
}

void* memset(void* dest, int value, size_t count) {
  auto* bytes = static_cast<unsigned char*>(dest);
  for (size_t i = 0; i < count; ++i) bytes[i] = static_cast<unsigned char>(value);
  return dest;
}

void* memcpy(void* dest, const void* src, size_t count) {
  auto* to = static_cast<unsigned char*>(dest);
  const auto* from = static_cast<const unsigned char*>(src);
  for (size_t i = 0; i < count; ++i) to[i] = from[i];
  return dest;
}

// Base 10 only, which is all the init parses.
long strtol(const char* text, char** end, int base) {
  (void)base;
  const char* at = text;
  bool negative = *at == '-';
  if (negative) ++at;
  const char* digits = at;
  long value = 0;
  while (*at >= '0' && *at <= '9') value = value * 10 + (*at++ - '0');
  if (end != nullptr) *end = const_cast<char*>(at == digits ? text : at);
  return negative ? -value : value;
}

int ZygoInitMain(int argc, char** argv, char** envp);  // init_main.cc

// The kernel's initial stack: argc, argv[0..argc-1], NULL, envp[...], NULL.
[[noreturn]] void InitStart(long* stack) {
  int argc = static_cast<int>(stack[0]);
  char** argv = reinterpret_cast<char**>(stack + 1);
  _exit(ZygoInitMain(argc, argv, argv + argc + 1));
}

#if defined(__x86_64__)
asm(".text\n.global _start\n_start:\n  mov %rsp, %rdi\n  and $-16, %rsp\n  call InitStart\n");
#elif defined(__aarch64__)
asm(".text\n.global _start\n_start:\n  mov x0, sp\n  bl InitStart\n");
#endif

}  // extern "C"
