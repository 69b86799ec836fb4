#include "core/launch.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/sched.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/child_report.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "core/base/sys/process.h"
#include "core/base/unique_fd.h"
#include "core/init/init_layout.h"
#include "core/init_binary.h"
#include "core/launch_step.h"
#include "core/sandbox_child.h"
#include "core/seccomp_policy.h"
#include "core/setup_failure.h"
#include "core/terminal.h"

namespace zygo::core {
namespace {

using base::ChildRecord;
using base::ChildRecordKind;
using base::UniqueFd;
using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point start, Clock::time_point end = Clock::now()) {
  return std::chrono::duration<double, std::milli>(end - start).count();
}

// zygo-init's argv (core/init/init_layout.h) and the command's environment, as
// NULL-terminated char* views made before clone, so the child never allocates.
struct ExecArrays {
  std::string inherited_count, candidate_count;
  std::vector<char*> init_argv, envp;
  ExecArrays(const Plan& plan, size_t inherited)
      : inherited_count(std::to_string(std::min<size_t>(inherited, init::kMaxInheritedFds))),
        candidate_count(std::to_string(plan.exec_candidates.size())) {
    init_argv.push_back(const_cast<char*>(init::kInitName));
    init_argv.push_back(inherited_count.data());
    init_argv.push_back(candidate_count.data());
    for (const std::string& path : plan.exec_candidates) {
      init_argv.push_back(const_cast<char*>(path.c_str()));
    }
    for (const std::string& arg : plan.spec.argv) {
      init_argv.push_back(const_cast<char*>(arg.c_str()));
    }
    for (const std::string& var : plan.env) envp.push_back(const_cast<char*>(var.c_str()));
    init_argv.push_back(nullptr);
    envp.push_back(nullptr);
  }
};

absl::Status MakePipe(UniqueFd* read_end, UniqueFd* write_end) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return base::ErrnoStatus(errno, "pipe2");
  read_end->Reset(fds[0]);
  write_end->Reset(fds[1]);
  return absl::OkStatus();
}

// What the sandbox told us over the report pipe.
struct ChildReports {
  bool setup_failed = false;
  ChildRecord failure{};
  bool exec_failed = false;
  int exec_errno = 0;
  bool exec_started = false;
  Clock::time_point exec_time;
  pid_t command_pid = 0;  // as the sandbox's pid namespace numbers it
  bool exited = false;
  int wait_status = 0;
  std::optional<ChildRecord> seccomp_kill;  // the first; a process is killed once
  std::vector<ChildRecord> seccomp_denials;

  // Reads one record into `*out`; false at EOF.
  bool ReadOne(int fd, ChildRecord* out) {
    ChildRecord record;
    ssize_t n;
    do {
      n = read(fd, &record, sizeof(record));
    } while (n < 0 && errno == EINTR);
    if (n != sizeof(record)) return false;
    *out = record;
    switch (record.kind) {
      case ChildRecordKind::kSetupFailed:
        setup_failed = true;
        failure = record;
        break;
      case ChildRecordKind::kExecFailed:
        exec_failed = true;
        exec_errno = record.err;
        break;
      case ChildRecordKind::kExecStarted:
        exec_started = true;
        exec_time = Clock::now();
        command_pid = record.value;
        break;
      case ChildRecordKind::kSeccompKilled:
        if (!seccomp_kill.has_value()) seccomp_kill = record;
        break;
      case ChildRecordKind::kSeccompDenied:
        // zygo-init sends at most one per syscall number, and only these numbers.
        if (seccomp_denials.size() < 1024) seccomp_denials.push_back(record);
        break;
      case ChildRecordKind::kExited:
        exited = true;
        wait_status = record.value;
        break;
    }
    return true;
  }
};

// A kSeccompKilled record, with the call's name and ABI.
SeccompKillNotice KillNotice(const ChildRecord& record) {
  const uint32_t arch = static_cast<uint32_t>(record.err);
  return {static_cast<pid_t>(record.value), record.step, SyscallName(arch, record.step),
          ArchName(arch, record.step)};
}

// Makes the cgroup, or explains why none can be made and how to run without one.
absl::StatusOr<std::unique_ptr<Cgroup>> MakeCgroup(const Plan& plan, CgroupDriver* driver) {
  absl::Status why = absl::FailedPreconditionError("this host has no usable cgroup hierarchy");
  if (driver != nullptr) {
    auto cgroup = driver->Create(plan.cgroup_limits);
    if (cgroup.ok()) return std::move(cgroup).value();
    why = cgroup.status();
  }
  if (plan.spec.loosening.unlimited()) return std::unique_ptr<Cgroup>();
  return CannotApplyLimits(why);
}

class Run {
 public:
  Run(const Plan& plan, std::unique_ptr<Cgroup> cgroup, const LaunchOptions& options)
      : plan_(plan),
        owned_cgroup_(std::move(cgroup)),
        cgroup_(options.cgroup != nullptr ? options.cgroup : owned_cgroup_.get()),
        exec_(plan, options.inherit_fds.size()),
        options_(options) {
    // A sandbox on the caller's own stdio may change its terminal's modes; they are put
    // back when it ends, on every path out (the destructor).
    if (options.forward_signals && options.stdio_fds[0] < 0) {
      terminal_ = std::make_unique<TerminalModes>();
    }
    for (int fd : options.inherit_fds) inherit_fds_.push_back(fd);
    inherit_fds_.push_back(-1);
  }

  ~Run() {
    if (pidfd_.valid() && !reaped_) {
      base::sys::RawPidfdSendSignal(pidfd_.get(), SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (owned_cgroup_) owned_cgroup_->Destroy().IgnoreError();
  }

  absl::StatusOr<Outcome> Execute() {
    start_ = Clock::now();
    ZYGO_ASSIGN_OR_RETURN(init_fd_, InitBinaryFd());
    ZYGO_RETURN_IF_ERROR(MakePipe(&go_read_, &go_write_));
    ZYGO_RETURN_IF_ERROR(MakePipe(&report_read_, &report_write_));
    if (options_.forward_signals) ZYGO_RETURN_IF_ERROR(BlockForwardedSignals());
    ZYGO_RETURN_IF_ERROR(Clone());
    go_read_.Reset();
    report_write_.Reset();
    tasks_files_.clear();
    ZYGO_RETURN_IF_ERROR(ReleaseChild());
    if (options_.on_started) options_.on_started(pid_, pidfd_.get(), cgroup_);
    Supervise();
    return Finish();
  }

 private:
  absl::Status BlockForwardedSignals() {
    sigset_t set;
    ForwardedSignals(&set);
    if (sigprocmask(SIG_BLOCK, &set, nullptr) != 0) return base::ErrnoStatus(errno, "sigprocmask");
    signal_fd_.Reset(signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
    if (!signal_fd_.valid()) return base::ErrnoStatus(errno, "signalfd");
    return absl::OkStatus();
  }

  absl::Status Clone() {
    bool born_in_cgroup = cgroup_ && cgroup_->clone_into_fd() >= 0;
    // v1 cannot clone into a cgroup: the child moves itself in, then joins a cgroup
    // namespace, so the namespace's root is the sandbox's own cgroup.
    bool late_cgroup_ns = cgroup_ && !born_in_cgroup;
    if (late_cgroup_ns) ZYGO_RETURN_IF_ERROR(OpenTasksFiles());
    struct clone_args args = {};
    args.flags = plan_.namespaces | CLONE_PIDFD;
    if (late_cgroup_ns) args.flags &= ~static_cast<uint64_t>(CLONE_NEWCGROUP);
    if (born_in_cgroup) {
      args.flags |= CLONE_INTO_CGROUP;
      args.cgroup = static_cast<uint64_t>(cgroup_->clone_into_fd());
    }
    int pidfd = -1;
    args.pidfd = reinterpret_cast<uint64_t>(&pidfd);
    args.exit_signal = SIGCHLD;

    const int close_fds[] = {go_write_.get(), report_read_.get(), signal_fd_.get(), -1};
    std::vector<int> tasks_fds;
    for (const UniqueFd& fd : tasks_files_) tasks_fds.push_back(fd.get());
    tasks_fds.push_back(-1);
    SandboxChildArgs child = {&plan_,
                              go_read_.get(),
                              report_write_.get(),
                              tasks_fds.data(),
                              (plan_.namespaces & CLONE_NEWNET) != 0,
                              plan_.spec.hostname.c_str(),
                              plan_.spec.workdir.c_str(),
                              init_fd_,
                              exec_.init_argv.data(),
                              exec_.envp.data(),
                              close_fds,
                              inherit_fds_.data(),
                              options_.stdio_fds,
                              plan_.spec.explain_denials};
    long pid = base::sys::RawClone3(&args);
    if (pid == 0) RunSandboxChild(child);
    if (pid < 0) {
      return base::ErrnoStatus(static_cast<int>(-pid),
                               "clone3(CLONE_NEWUSER|CLONE_NEWPID|CLONE_NEWNS|CLONE_NEWNET|...)");
    }
    pid_ = static_cast<pid_t>(pid);
    pidfd_.Reset(pidfd);
    return absl::OkStatus();
  }

  absl::Status OpenTasksFiles() {
    for (const std::string& dir : cgroup_->paths()) {
      std::string path = absl::StrCat(dir, "/tasks");
      UniqueFd fd(open(path.c_str(), O_WRONLY | O_CLOEXEC));
      if (!fd.valid()) return base::ErrnoStatus(errno, absl::StrCat("open(", path, ")"));
      tasks_files_.push_back(std::move(fd));
    }
    return absl::OkStatus();
  }

  // Writes the id maps, then lets the child run (it joins a v1 cgroup itself).
  absl::Status ReleaseChild() {
    ZYGO_RETURN_IF_ERROR(WriteIdMapsFromParent(pid_, plan_.identity));
    // After the maps: pasta joins the user namespace and must find root mapped.
    if (options_.before_release) ZYGO_RETURN_IF_ERROR(options_.before_release(pid_));
    char go = 1;
    if (write(go_write_.get(), &go, 1) != 1) return base::ErrnoStatus(errno, "write(go pipe)");
    go_write_.Reset();
    return absl::OkStatus();
  }

  // Waits for the init to exit, forwarding signals and enforcing the deadline.
  void Supervise() {
    auto deadline = start_ + std::chrono::milliseconds(plan_.spec.timeout_ms);
    bool init_exited = false;
    while (!init_exited) {
      struct pollfd fds[3] = {{pidfd_.get(), POLLIN, 0},
                              {signal_fd_.get(), POLLIN, 0},
                              {report_read_.get(), POLLIN, 0}};
      int wait_ms = -1;
      if (!timed_out_ && !options_.no_deadline) {
        auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
        wait_ms = static_cast<int>(std::max<int64_t>(0, left.count()));
      }
      // Without signal forwarding there is no signalfd; poll skips a negative fd.
      int n = poll(fds, report_read_.valid() ? 3 : 2, wait_ms);
      if (n < 0 && errno != EINTR) break;
      if (n == 0 && !timed_out_ && !options_.no_deadline) {
        // Killing pid 1 kills every process in its pid namespace, however it forked.
        timed_out_ = true;
        base::sys::RawPidfdSendSignal(pidfd_.get(), SIGKILL);
        continue;
      }
      if (fds[1].revents & POLLIN) ForwardSignals();
      if (report_read_.valid() && (fds[2].revents & (POLLIN | POLLHUP))) {
        ReadReport();
      }
      if (fds[0].revents & POLLIN) init_exited = true;
    }
    while (report_read_.valid()) ReadReport();
    report_read_.Reset();
  }

  // One record from zygo-init; a seccomp kill is passed on as it happens.
  void ReadReport() {
    ChildRecord record{};
    if (!reports_.ReadOne(report_read_.get(), &record)) {
      report_read_.Reset();
      return;
    }
    if (record.kind == ChildRecordKind::kSeccompKilled && options_.on_seccomp_kill) {
      options_.on_seccomp_kill(KillNotice(record));
    }
  }

  void ForwardSignals() {
    struct signalfd_siginfo info;
    while (read(signal_fd_.get(), &info, sizeof(info)) == sizeof(info)) {
      base::sys::RawPidfdSendSignal(pidfd_.get(), static_cast<int>(info.ssi_signo));
    }
  }

  absl::StatusOr<Outcome> Finish() {
    int init_status = 0;
    struct rusage usage = {};
    while (wait4(pid_, &init_status, 0, &usage) < 0 && errno == EINTR) {
    }
    reaped_ = true;
    auto end = Clock::now();
    Outcome outcome;
    if (cgroup_ != nullptr) {
      outcome.limits_applied = true;
      outcome.memory_bytes = plan_.cgroup_limits.memory_bytes;
      outcome.cpus = plan_.cgroup_limits.cpus;
      outcome.pids_limit = plan_.cgroup_limits.pids_max;
    }
    outcome.timeout_ms = plan_.spec.timeout_ms;
    outcome.net_mode = NetModeName(plan_.spec.net);
    outcome.allow = plan_.spec.allow;
    outcome.timed_out = timed_out_;
    outcome.peak_rss_kb = usage.ru_maxrss;
    outcome.cpu_user_ms = usage.ru_utime.tv_sec * 1000 + usage.ru_utime.tv_usec / 1000;
    outcome.cpu_sys_ms = usage.ru_stime.tv_sec * 1000 + usage.ru_stime.tv_usec / 1000;
    CgroupUsage counted;
    if (cgroup_) {
      auto read = cgroup_->ReadUsage();
      if (read.ok()) counted = *read;
      outcome.cgroup_driver = cgroup_->clone_into_fd() >= 0 ? "v2" : "v1";
      if (counted.cpu_user_us > 0 || counted.cpu_system_us > 0) {
        outcome.cpu_user_ms = counted.cpu_user_us / 1000;
        outcome.cpu_sys_ms = counted.cpu_system_us / 1000;
      }
      if (owned_cgroup_) ZYGO_RETURN_IF_ERROR(owned_cgroup_->Destroy());
    }
    if (reports_.exec_started) {
      outcome.start_ms = MsSince(start_, reports_.exec_time);
      outcome.run_ms = MsSince(reports_.exec_time, end);
    } else {
      outcome.start_ms = MsSince(start_, end);
    }
    Classify(init_status, counted, &outcome);
    outcome.wall_ms = MsSince(start_);
    return outcome;
  }

  void Classify(int init_status, const CgroupUsage& counted, Outcome* outcome) const {
    outcome->oom_killed = counted.oom_kills > 0;
    if (reports_.setup_failed) {
      outcome->status = OutcomeStatus::kSetupError;
      outcome->exit_code = 125;
      outcome->error = DescribeSetupFailure(plan_, reports_.failure);
      return;
    }
    if (reports_.exec_failed) {
      outcome->status = OutcomeStatus::kSetupError;
      outcome->exit_code = reports_.exec_errno == ENOENT ? 127 : 126;
      outcome->error = absl::StrCat(plan_.spec.argv[0], ": ",
                                    reports_.exec_errno == ENOENT ? "command not found in the image"
                                                                  : strerror(reports_.exec_errno));
      return;
    }
    AddSeccompReports(outcome);
    // The command's own status when the init reported it; else the init's.
    int status = reports_.exited ? reports_.wait_status : init_status;
    bool command_killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
    if (timed_out_) {
      outcome->status = OutcomeStatus::kTimeout;
      outcome->exit_code = 137;
      outcome->signal = SIGKILL;
      return;
    }
    if (command_killed && outcome->seccomp_kill.has_value() && outcome->seccomp_kill->command) {
      // Killed by zygo-init for the call, as the kernel would have with SIGSYS.
      outcome->status = OutcomeStatus::kSeccompKilled;
      outcome->signal = SIGSYS;
      outcome->exit_code = 128 + SIGSYS;
      return;
    }
    if (WIFSIGNALED(status)) {
      outcome->signal = WTERMSIG(status);
      outcome->exit_code = 128 + outcome->signal;  // 137 for an OOM kill's SIGKILL
      outcome->status = OutcomeStatus::kSignaled;
    } else {
      outcome->exit_code = WEXITSTATUS(status);
      outcome->status = outcome->exit_code == 0 ? OutcomeStatus::kOk : OutcomeStatus::kNonzeroExit;
    }
    // What happened to any process of the run, even one the command outlived, is the
    // run's status, so status and the flags beside it always agree; the exit code stays
    // the command's own.
    if (outcome->seccomp_kill.has_value()) {
      outcome->status = OutcomeStatus::kSeccompKilled;
    } else if (outcome->oom_killed) {
      outcome->status = OutcomeStatus::kOom;
    } else if (counted.pids_max_hits > 0) {
      outcome->status = OutcomeStatus::kPidsLimit;
    }
  }

  void AddSeccompReports(Outcome* outcome) const {
    if (reports_.seccomp_kill.has_value()) {
      SeccompKillNotice kill = KillNotice(*reports_.seccomp_kill);
      outcome->seccomp_kill =
          Outcome::SeccompKill{kill.syscall, std::move(kill.name), std::move(kill.arch),
                               kill.sandbox_pid == reports_.command_pid};
    }
    outcome->denials_explained = plan_.spec.explain_denials;
    for (const ChildRecord& denial : reports_.seccomp_denials) {
      outcome->seccomp_denials.push_back({denial.step < 0
                                              ? std::string("syscalls past 511")
                                              : SyscallName(AUDIT_ARCH_X86_64, denial.step),
                                          denial.value});
    }
  }

  const Plan& plan_;
  std::unique_ptr<Cgroup> owned_cgroup_;  // made for this run; null when the caller's is used
  Cgroup* cgroup_;                        // the one the sandbox is in, or null
  ExecArrays exec_;
  const LaunchOptions& options_;
  std::vector<int> inherit_fds_;  // -1-terminated, for the child
  UniqueFd go_read_, go_write_, report_read_, report_write_, signal_fd_, pidfd_;
  std::vector<UniqueFd> tasks_files_;        // v1: the child writes itself into these
  std::unique_ptr<TerminalModes> terminal_;  // the caller's, restored when the run ends
  int init_fd_ = -1;                         // zygo-init's memfd, owned by init_binary.cc
  pid_t pid_ = -1;
  bool reaped_ = false;
  bool timed_out_ = false;
  Clock::time_point start_;
  ChildReports reports_;
};

}  // namespace

absl::StatusOr<Outcome> Launch(const Plan& plan, CgroupDriver* driver,
                               const BeforeRelease& before_release) {
  LaunchOptions options;
  options.before_release = before_release;
  return Launch(plan, driver, options);
}

absl::StatusOr<Outcome> Launch(const Plan& plan, CgroupDriver* driver,
                               const LaunchOptions& options) {
  std::unique_ptr<Cgroup> cgroup;
  if (options.cgroup == nullptr) {
    ZYGO_ASSIGN_OR_RETURN(cgroup, MakeCgroup(plan, driver));
  }
  Run run(plan, std::move(cgroup), options);
  absl::StatusOr<Outcome> outcome = run.Execute();
  if (outcome.ok() && outcome->limits_applied && driver != nullptr) {
    outcome->cgroup_placement = CgroupPlacementName(driver->placement().kind);
  }
  return outcome;
}

}  // namespace zygo::core
