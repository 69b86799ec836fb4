// What every escape probe subcommand shares: its result type, the output contract
// (escape_probe.cc's header), and small helpers for probes that run code in a child.
// libc and kernel headers only: the probe must not share code with what it tests.
#ifndef ZYGO_SECURITY_TESTS_TESTCASES_PROBE_SUPPORT_H_
#define ZYGO_SECURITY_TESTS_TESTCASES_PROBE_SUPPORT_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace zygo::security_tests {

using Args = std::vector<std::string>;

// What one probe observed: the action went through, the kernel refused it with `err`, or the
// arguments were unusable (exit 2, no RESULT line).
struct Outcome {
  enum class Kind { kAllowed, kDenied, kBadUsage };
  Kind kind;
  int err;  // errno when kind == kDenied, else 0.
};

constexpr Outcome Allowed() { return {Outcome::Kind::kAllowed, 0}; }
constexpr Outcome Denied(int err) { return {Outcome::Kind::kDenied, err}; }
constexpr Outcome BadUsage() { return {Outcome::Kind::kBadUsage, 0}; }

using ProbeFn = Outcome (*)(const Args&);

struct ProbeSpec {
  std::string_view name;
  std::string_view arg_usage;
  size_t min_args;
  size_t max_args;
  std::string_view description;
  ProbeFn fn;
};

constexpr size_t kAnyCount = 1024;

// Maps a libc-style return (-1 plus errno on failure); call it right after the syscall.
Outcome FromRet(long ret);
// Like FromRet for calls that return an fd, which is closed so nothing stays open.
Outcome FromFd(long fd);
std::string ErrnoName(int err);
std::string SignalName(int sig);
// Prints one INFO line and flushes, so a later fork() cannot duplicate buffered output.
void Info(const std::string& text);
// Reports which step failed, then denies with that step's errno (captured by the caller).
Outcome DeniedAt(std::string_view step, int err);
// Reads up to `max` bytes, retrying EINTR and short reads; -1 with errno if nothing was read.
ssize_t ReadUpTo(int fd, char* buf, size_t max);
// Reads a whole small file (procfs); false with errno on failure.
bool ReadWholeFile(const char* path, std::string* out);
// A file name that no earlier run left behind: pids repeat across sandboxes (often pid 2).
std::string UniqueName(std::string_view prefix);
bool ParseLong(const std::string& text, long min, long max, long* out);
// Returns the value of the "<field>:" line of /proc/self/status ("" if absent).
std::string StatusField(const std::string& status, std::string_view field);
uint64_t CapEff();
// Ignores the signals a supervisor uses to ask a process to stop. Async-signal-safe.
void IgnoreTermination();
// Dies by `sig`, so the caller sees the signal a child died from (e.g. SIGSYS from a seccomp
// KILL action) rather than a misleading RESULT line.
[[noreturn]] void DieBySignal(int sig);
// Waits for `pid`; a child killed by a signal takes this process down the same way.
void ReapOrDie(pid_t pid);
// Runs fn(arg) in a forked child, so the probe's own namespaces and keyrings stay put, and
// returns the errno the child reported (0 = success) as an Outcome.
Outcome RunInChild(int (*fn)(long), long arg);
// For raw clone/clone3 results: the child side (0) exits at once, the parent reaps it.
Outcome ReapRawClone(long pid);

}  // namespace zygo::security_tests

#endif  // ZYGO_SECURITY_TESTS_TESTCASES_PROBE_SUPPORT_H_
