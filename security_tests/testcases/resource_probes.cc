// Escape probe subcommands (escape_probe.cc): resource limits (never run these outside a sandbox).
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <string>
#include <vector>

#include "security_tests/testcases/escape_probes.h"
#include "security_tests/testcases/probe_support.h"

namespace zygo::security_tests {
namespace {

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

constexpr ProbeSpec kProbes[] = {
    {"fork-bomb", "", 0, 0, "fork until refused (cap 100000)", ProbeForkBomb},
    {"memory-bomb", "[MIB]", 0, 1, "touch MIB MiB (default 1024)", ProbeMemoryBomb},
    {"deadline-evade", "", 0, 0, "ignore SIGTERM, leave evaders, never exit", ProbeDeadlineEvade},
};

}  // namespace

std::span<const ProbeSpec> ResourceProbes() { return kProbes; }

}  // namespace zygo::security_tests
