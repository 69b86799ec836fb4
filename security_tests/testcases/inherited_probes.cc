// Escape probe subcommands (escape_probe.cc): inherited state: fds, environment, other processes.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <string>
#include <string_view>
#include <vector>

#include "security_tests/testcases/escape_probes.h"
#include "security_tests/testcases/probe_support.h"

namespace zygo::security_tests {
namespace {

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

constexpr ProbeSpec kProbes[] = {
    {"fds", "", 0, 0, "any inherited fd above 2", ProbeFds},
    {"open-fd-path", "N", 1, 1, "open and chdir /proc/self/fd/N", ProbeOpenFdPath},
    {"env", "[NAME...]", 0, kAnyCount, "list variable names; any NAME set", ProbeEnv},
    {"kill-all", "", 0, 0, "kill(-1, 0)", ProbeKillAll},
    {"kill-pid", "PID", 1, 1, "kill(PID, 0)", ProbeKillPid},
};

}  // namespace

std::span<const ProbeSpec> InheritedProbes() { return kProbes; }

}  // namespace zygo::security_tests
