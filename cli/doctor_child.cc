#include "cli/doctor_child.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "core/base/sys/process.h"
#include "core/base/sys/wait_status.h"
#include "core/base/unique_fd.h"
#include "core/host_features.h"
#include "core/identity.h"

namespace zygo::cli {
namespace {

using base::UniqueFd;

absl::Status MakePipe(UniqueFd* read_end, UniqueFd* write_end) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return base::ErrnoStatus(errno, "pipe2(O_CLOEXEC)");
  read_end->Reset(fds[0]);
  write_end->Reset(fds[1]);
  return absl::OkStatus();
}

// The child: waits for "go" (EOF instead means the parent gave up), runs the attempt and
// writes its report. Async-signal-safe only.
[[noreturn]] void ChildMain(const ChildAttempt& attempt, int go_read, int report_write) {
  // The child must not outlive a doctor killed halfway (it may hold a cgroup).
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  char go = 0;
  ssize_t n;
  do {
    n = read(go_read, &go, 1);
  } while (n < 0 && errno == EINTR);
  if (n != 1) _exit(99);
  ChildReport report;
  attempt.body(attempt.arg, &report);
  report.text[sizeof(report.text) - 1] = '\0';
  while (write(report_write, &report, sizeof(report)) < 0 && errno == EINTR) {
  }
  _exit(0);
}

// Reads the child's report until it is whole, EOF, or the deadline.
bool ReadReport(int fd, ChildReport* report, std::chrono::steady_clock::time_point deadline) {
  char* into = reinterpret_cast<char*>(report);
  size_t got = 0;
  while (got < sizeof(*report)) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    struct pollfd pfd = {fd, POLLIN, 0};
    int ready = poll(&pfd, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return false;
    ssize_t n = read(fd, into + got, sizeof(*report) - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    got += static_cast<size_t>(n);
  }
  return true;
}

long RawResult(long rc) { return rc < 0 ? -errno : rc; }

// "CLONE_NEWUSER|CLONE_NEWNET", for errors.
std::string CloneFlagNames(uint64_t flags) {
  static const std::pair<uint64_t, const char*> kNames[] = {
      {CLONE_NEWUSER, "CLONE_NEWUSER"},     {CLONE_NEWPID, "CLONE_NEWPID"},
      {CLONE_NEWNS, "CLONE_NEWNS"},         {CLONE_NEWNET, "CLONE_NEWNET"},
      {CLONE_NEWIPC, "CLONE_NEWIPC"},       {CLONE_NEWUTS, "CLONE_NEWUTS"},
      {CLONE_NEWCGROUP, "CLONE_NEWCGROUP"}, {CLONE_INTO_CGROUP, "CLONE_INTO_CGROUP"}};
  std::vector<std::string> names;
  for (const auto& [flag, name] : kNames) {
    if ((flags & flag) != 0) names.push_back(name);
  }
  return names.empty() ? "no namespaces" : absl::StrJoin(names, "|");
}

int Reap(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

}  // namespace

absl::StatusOr<ChildOutcome> RunChildAttempt(const ChildAttempt& attempt) {
  UniqueFd go_read, go_write, report_read, report_write;
  ZYGO_RETURN_IF_ERROR(MakePipe(&go_read, &go_write));
  ZYGO_RETURN_IF_ERROR(MakePipe(&report_read, &report_write));
  struct clone_args args = {};
  args.flags = attempt.clone_flags;
  if (attempt.cgroup_fd >= 0) {
    args.flags |= CLONE_INTO_CGROUP;
    args.cgroup = static_cast<uint64_t>(attempt.cgroup_fd);
  }
  args.exit_signal = SIGCHLD;
  long pid;
  const char* call = "clone3";
  if (core::ProbeHostFeatures().clone3 == core::SyscallState::kNoSys && attempt.cgroup_fd < 0) {
    // No clone3 (a container's seccomp profile, Linux < 5.3): clone does the rest. zygo
    // run itself needs clone3, which the sandbox line shows; these lines show the rest.
    call = "clone";
    pid = RawResult(
        syscall(SYS_clone, attempt.clone_flags | SIGCHLD, nullptr, nullptr, nullptr, nullptr));
  } else {
    pid = base::sys::RawClone3(&args);
  }
  if (pid == 0) {
    // Closed so that the parent's end is the only writer: its exit is the child's EOF.
    close(go_write.Release());
    close(report_read.Release());
    ChildMain(attempt, go_read.get(), report_write.get());
  }
  if (pid < 0) {
    return base::ErrnoStatus(static_cast<int>(-pid),
                             absl::StrCat(call, "(", CloneFlagNames(args.flags), ")"));
  }
  const pid_t child = static_cast<pid_t>(pid);
  go_read.Reset();
  report_write.Reset();
  absl::Status setup = absl::OkStatus();
  if (attempt.write_id_maps) {
    setup = core::WriteIdMapsFromParent(child, core::BuildIdentityPlan(0, 0));
  }
  if (setup.ok() && attempt.before_go) setup = attempt.before_go(child);
  if (!setup.ok()) {
    kill(child, SIGKILL);
    Reap(child);
    return setup;
  }
  char go = 1;
  if (write(go_write.get(), &go, 1) != 1) {
    absl::Status failed = base::ErrnoStatus(errno, "write(go pipe)");
    kill(child, SIGKILL);
    Reap(child);
    return failed;
  }
  ChildOutcome outcome;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(attempt.timeout_ms);
  outcome.reported = ReadReport(report_read.get(), &outcome.report, deadline);
  if (!outcome.reported) {
    outcome.timed_out = std::chrono::steady_clock::now() >= deadline;
    kill(child, SIGKILL);
  }
  outcome.wait_status = Reap(child);
  return outcome;
}

std::string DescribeUnreported(const ChildOutcome& outcome) {
  if (outcome.timed_out) return "gave no report in time and was killed";
  return absl::StrCat("died: ", base::sys::DescribeWaitStatus(outcome.wait_status));
}

std::optional<std::string> AttemptFailure(const absl::StatusOr<ChildOutcome>& outcome,
                                          const char* const* steps) {
  if (!outcome.ok()) return std::string(outcome.status().message());
  if (!outcome->reported) return absl::StrCat("the child ", DescribeUnreported(*outcome));
  const ChildReport& report = outcome->report;
  if (report.step == 0) return std::nullopt;
  if (report.err == 0) return std::string(steps[report.step]);
  return absl::StrCat(steps[report.step], ": ", base::ErrnoName(report.err));
}

}  // namespace zygo::cli
