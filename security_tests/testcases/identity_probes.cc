// Escape probe subcommands (escape_probe.cc): terminal injection, identity and privilege.
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "security_tests/testcases/escape_probes.h"
#include "security_tests/testcases/probe_support.h"

namespace zygo::security_tests {
namespace {

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

constexpr ProbeSpec kProbes[] = {
    {"ptrace-parent", "", 0, 0, "PTRACE_ATTACH to the parent (or pid 1)", ProbePtraceParent},
    {"tiocsti", "", 0, 0, "TIOCSTI one space into fd 0 (needs a pty)", ProbeTiocsti},
    {"tiocsti-high", "", 0, 0, "TIOCSTI with the high 32 bits set", ProbeTiocstiHigh},
    {"caps", "", 0, 0, "any capability in CapPrm/CapEff/CapBnd/CapAmb", ProbeCaps},
    {"whoami", "", 0, 0, "euid 0 with effective capabilities", ProbeWhoami},
    {"setuid-gain", "PATH", 1, 1, "exec setuid PATH whoami", ProbeSetuidGain},
    {"hostname-set", "", 0, 0, "sethostname to the current name", ProbeHostnameSet},
};

}  // namespace

std::span<const ProbeSpec> IdentityProbes() { return kProbes; }

}  // namespace zygo::security_tests
