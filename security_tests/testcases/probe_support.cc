#include "security_tests/testcases/probe_support.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

namespace zygo::security_tests {

// Maps a libc-style return (-1 plus errno on failure); call it right after the syscall.
Outcome FromRet(long ret) { return ret >= 0 ? Allowed() : Denied(errno); }

// Like FromRet for calls that return an fd, which is closed so nothing stays open.
Outcome FromFd(long fd) {
  Outcome out = FromRet(fd);
  if (fd >= 0) close(static_cast<int>(fd));
  return out;
}

std::string ErrnoName(int err) {
  const char* name = strerrorname_np(err);
  return name != nullptr ? name : "E" + std::to_string(err);
}

std::string SignalName(int sig) {
  const char* name = sigabbrev_np(sig);
  return name != nullptr ? std::string("SIG") + name : "signal " + std::to_string(sig);
}

// Prints one INFO line and flushes, so a later fork() cannot duplicate buffered output.
void Info(const std::string& text) {
  printf("INFO %s\n", text.c_str());
  fflush(stdout);
}

// Reports which step failed, then denies with that step's errno (captured by the caller).
Outcome DeniedAt(std::string_view step, int err) {
  Info(std::string(step) + " failed: " + ErrnoName(err));
  return Denied(err);
}

// ---------------------------------------------------------------------------------------------
// Small helpers.

// Reads up to `max` bytes, retrying EINTR and short reads; -1 with errno if nothing was read.
ssize_t ReadUpTo(int fd, char* buf, size_t max) {
  size_t total = 0;
  while (total < max) {
    ssize_t n = read(fd, buf + total, max - total);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return total > 0 ? static_cast<ssize_t>(total) : -1;
    if (n == 0) break;
    total += static_cast<size_t>(n);
  }
  return static_cast<ssize_t>(total);
}

// Reads a whole small file (procfs); false with errno on failure.
bool ReadWholeFile(const char* path, std::string* out) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[4096];
  ssize_t n;
  while ((n = ReadUpTo(fd, buf, sizeof buf)) > 0) out->append(buf, static_cast<size_t>(n));
  int err = errno;
  close(fd);
  errno = err;
  return n == 0;
}

// A file name that no earlier run left behind: pids repeat across sandboxes (often pid 2).
std::string UniqueName(std::string_view prefix) {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::string(prefix) + "-" + std::to_string(getpid()) + "-" +
         std::to_string(ts.tv_sec * 1000000000L + ts.tv_nsec);
}

bool ParseLong(const std::string& text, long min, long max, long* out) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  long value = strtol(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || value < min || value > max) return false;
  *out = value;
  return true;
}

// Returns the value of the "<field>:" line of /proc/self/status ("" if absent).
std::string StatusField(const std::string& status, std::string_view field) {
  std::string key = "\n" + std::string(field) + ":";
  size_t pos = ("\n" + status).find(key);
  if (pos == std::string::npos) return "";
  size_t start = status.find_first_not_of(" \t", pos + key.size() - 1);
  if (start == std::string::npos) return "";
  return status.substr(start, status.find('\n', start) - start);
}

uint64_t CapEff() {
  std::string status;
  if (!ReadWholeFile("/proc/self/status", &status)) return 0;
  return strtoull(StatusField(status, "CapEff").c_str(), nullptr, 16);
}

// Ignores the signals a supervisor uses to ask a process to stop. Async-signal-safe.
void IgnoreTermination() {
  struct sigaction sa {};
  sa.sa_handler = SIG_IGN;
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaction(sig, &sa, nullptr);
}

// ---------------------------------------------------------------------------------------------
// Children. Code between fork and _exit makes raw syscalls only: no allocation, no stdio.

// Dies by `sig`, so the caller sees the signal a child died from (e.g. SIGSYS from a seccomp
// KILL action) rather than a misleading RESULT line.
[[noreturn]] void DieBySignal(int sig) {
  Info("child-killed-by-signal=" + SignalName(sig));
  signal(sig, SIG_DFL);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  sigprocmask(SIG_UNBLOCK, &set, nullptr);
  raise(sig);
  _exit(128 + sig);
}

// Waits for `pid`; a child killed by a signal takes this process down the same way.
void ReapOrDie(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, __WALL) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) DieBySignal(WTERMSIG(status));
}

// Runs fn(arg) in a forked child, so the probe's own namespaces and keyrings stay put, and
// returns the errno the child reported (0 = success) as an Outcome.
Outcome RunInChild(int (*fn)(long), long arg) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return DeniedAt("pipe2", errno);
  pid_t pid = fork();
  if (pid < 0) {
    int err = errno;
    close(fds[0]);
    close(fds[1]);
    return DeniedAt("fork", err);
  }
  if (pid == 0) {
    int err = fn(arg);
    if (write(fds[1], &err, sizeof err) != sizeof err) _exit(1);
    _exit(0);
  }
  close(fds[1]);
  int err = 0;
  ssize_t n = ReadUpTo(fds[0], reinterpret_cast<char*>(&err), sizeof err);
  close(fds[0]);
  ReapOrDie(pid);
  if (n != sizeof err) return DeniedAt("child-report", EPROTO);
  return err == 0 ? Allowed() : Denied(err);
}

// For raw clone/clone3 results: the child side (0) exits at once, the parent reaps it.
Outcome ReapRawClone(long pid) {
  if (pid == 0) _exit(0);
  if (pid < 0) return Denied(errno);
  ReapOrDie(static_cast<pid_t>(pid));
  return Allowed();
}

}  // namespace zygo::security_tests
