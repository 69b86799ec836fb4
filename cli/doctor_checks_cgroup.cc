// Limits, attempted: a cgroup where a run makes one, a child placed in it as a run places
// its sandbox, which then hits the pids limit and is charged its memory; `zygo run host
// /bin/true` itself; and the stale cgroups killed zygo processes left.
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/doctor_checks.h"
#include "cli/doctor_child.h"
#include "cli/doctor_proc_text.h"
#include "core/base/unique_fd.h"
#include "core/cgroup.h"
#include "core/launch.h"
#include "core/loosening.h"
#include "core/plan.h"
#include "images/store.h"

namespace zygo::cli {
namespace {

// The limits the attempt writes: small, so that hitting pids.max is cheap.
constexpr int64_t kMemoryBytes = 64LL << 20;
constexpr int64_t kPidsMax = 16;
constexpr double kCpus = 0.5;
// What the child touches, to be charged for it.
constexpr size_t kTouchBytes = 8 << 20;
constexpr int kMaxForks = 32;

// Steps of the child's report.
enum LimitsStep : int32_t {
  kLimitsOk = 0,
  kReadCgroup = 1,
  kTouchMemory = 2,
  kJoin = 3,
  kNotInside = 4,  // value: the index of the directory whose cgroup.procs lacks it
};

constexpr int kMaxDirs = 8;

struct LimitsArgs {
  // v1: the cgroup's tasks files, open for writing, which the child joins by writing "0"
  // (as a run's sandbox does: the kernel then moves the writing thread itself). -1 ends it.
  int join_fds[kMaxDirs] = {-1, -1, -1, -1, -1, -1, -1, -1};
  // <dir>/cgroup.procs of each of the cgroup's directories; "" ends it.
  char procs[kMaxDirs][512] = {};
};

void LimitsBody(const void* arg, ChildReport* report) {
  const LimitsArgs& args = *static_cast<const LimitsArgs*>(arg);
  for (int i = 0; i < kMaxDirs && args.join_fds[i] >= 0; ++i) {
    if (write(args.join_fds[i], "0", 1) != 1) {
      report->step = kJoin;
      report->err = errno;
      return;
    }
  }
  // Where it is, as it sees it (for the line) and as each cgroup lists its members.
  int fd = open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC);
  ssize_t n = fd < 0 ? -1 : read(fd, report->text, sizeof(report->text) - 1);
  if (fd >= 0) close(fd);
  if (n <= 0) {
    report->step = kReadCgroup;
    report->err = errno;
    return;
  }
  for (int i = 0; i < kMaxDirs && args.procs[i][0] != '\0'; ++i) {
    if (!FileListsPid(args.procs[i], getpid())) {
      report->step = kNotInside;
      report->value = i;
      return;
    }
  }
  void* memory =
      mmap(nullptr, kTouchBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) {
    report->step = kTouchMemory;
    report->err = errno;
    return;
  }
  memset(memory, 1, kTouchBytes);
  // Fork until the pids limit refuses: this process counts as one of kPidsMax.
  pid_t children[kMaxForks];
  int forked = 0;
  const pid_t self = getpid();
  for (; forked < kMaxForks; ++forked) {
    pid_t pid = fork();
    if (pid == 0) {
      if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != self) _exit(0);
      pause();
      _exit(0);
    }
    if (pid < 0) {
      report->err = errno;
      break;
    }
    children[forked] = pid;
  }
  for (int i = 0; i < forked; ++i) kill(children[i], SIGKILL);
  for (int i = 0; i < forked; ++i) {
    while (waitpid(children[i], nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  report->value = forked;
}

// The child's verdict on the cgroup it was placed in; "" when it all held.
std::string JudgeLimitsChild(const ChildOutcome& outcome, const core::Cgroup& cgroup) {
  if (!outcome.reported) {
    return absl::StrCat("the child placed in it ", DescribeUnreported(outcome));
  }
  const ChildReport& report = outcome.report;
  if (report.step == kReadCgroup) {
    return absl::StrCat("the child could not read /proc/self/cgroup: ", strerror(report.err));
  }
  if (report.step == kTouchMemory) return absl::StrCat("mmap(8 MiB): ", strerror(report.err));
  if (report.step == kJoin) {
    return absl::StrCat("the child could not join it (write(tasks, \"0\")): ",
                        strerror(report.err));
  }
  if (report.step == kNotInside) {
    const std::vector<std::string> paths = cgroup.paths();
    return absl::StrCat(
        "the child was not in ",
        report.value < static_cast<int64_t>(paths.size()) ? paths[report.value] : "it",
        " (its cgroup.procs does not list it); its /proc/self/cgroup says ",
        absl::StrJoin(absl::StrSplit(report.text, '\n', absl::SkipEmpty()), " "));
  }
  if (report.value != kPidsMax - 1 || report.err != EAGAIN) {
    return absl::StrCat("pids.max ", kPidsMax, " did not hold: the child forked ", report.value,
                        " times (", kPidsMax - 1, " expected, then EAGAIN; got ",
                        report.err == 0 ? "no refusal" : strerror(report.err), ")");
  }
  return "";
}

// The attempt in a cgroup made for it: a child placed there the way a run places its
// sandbox, then the cgroup removed. `failure` is "" when everything held.
struct Trial {
  std::string failure;
  bool born_inside = false;  // v2: CLONE_INTO_CGROUP; v1: it wrote its tasks files
  int64_t forks_allowed = 0;
  int64_t memory_peak_bytes = 0;
};

Trial TryCgroup(core::Cgroup& cgroup) {
  Trial trial;
  ChildAttempt attempt;
  LimitsArgs args;
  attempt.cgroup_fd = cgroup.clone_into_fd();
  trial.born_inside = attempt.cgroup_fd >= 0;
  if (!trial.born_inside) {
    // v1 cannot clone into a cgroup: the child joins it first thing, as a run's does.
    absl::StatusOr<std::vector<int>> join = cgroup.SelfJoinFiles();
    if (!join.ok() || join->size() >= kMaxDirs) {
      cgroup.Destroy().IgnoreError();
      trial.failure = absl::StrCat("its tasks files: ",
                                   join.ok() ? "too many hierarchies" : join.status().message());
      return trial;
    }
    for (size_t i = 0; i < join->size(); ++i) args.join_fds[i] = (*join)[i];
  }
  const std::vector<std::string> paths = cgroup.paths();
  if (paths.size() >= static_cast<size_t>(kMaxDirs)) {
    trial.failure = "too many hierarchies";
    return trial;
  }
  for (size_t i = 0; i < paths.size(); ++i) {
    snprintf(args.procs[i], sizeof(args.procs[i]), "%s/cgroup.procs", paths[i].c_str());
  }
  attempt.body = LimitsBody;
  attempt.arg = &args;
  // Touching 8 MiB and 16 forks take well over the default 2 s on a loaded emulated VM.
  attempt.timeout_ms = 10'000;
  absl::StatusOr<ChildOutcome> outcome = RunChildAttempt(attempt);
  absl::StatusOr<core::CgroupUsage> usage = cgroup.ReadUsage();
  cgroup.KillAll().IgnoreError();
  absl::Status destroyed = cgroup.Destroy();
  if (!outcome.ok()) {
    trial.failure =
        absl::StrCat("a child could not be placed in ", absl::StrJoin(cgroup.paths(), ", "), ": ",
                     outcome.status().message());
    return trial;
  }
  trial.forks_allowed = outcome->report.value;
  trial.memory_peak_bytes = usage.ok() ? usage->memory_peak_bytes : 0;
  trial.failure = JudgeLimitsChild(*outcome, cgroup);
  // 0: the kernel keeps no peak (v2 before 5.19); otherwise the touched memory must be in it.
  if (trial.failure.empty() && trial.memory_peak_bytes != 0 &&
      trial.memory_peak_bytes < static_cast<int64_t>(kTouchBytes)) {
    trial.failure = absl::StrCat("the child touched 8 MiB but the cgroup was charged ",
                                 trial.memory_peak_bytes, " bytes");
  }
  if (trial.failure.empty() && !destroyed.ok()) {
    trial.failure =
        absl::StrCat("the attempt worked but its cgroup was not removed: ", destroyed.message());
  }
  return trial;
}

}  // namespace

DoctorCheck CheckLimits(const ProbedDriver& driver, bool allow_unlimited) {
  DoctorCheck check{"limits", "limits", CheckStatus::kOk, !allow_unlimited,
                    allow_unlimited ? "runs with limits (you asked for --allow-unlimited)"
                                    : "every run without --allow-unlimited"};
  auto missing = [&](std::string detail) {
    check.status = CheckStatus::kMissing;
    check.detail = std::move(detail);
    check.fix = core::CgroupFixes();
    return check;
  };
  if (!driver.ok()) return missing(std::string(driver.status().message()));
  const std::string name = absl::StrCat("cgroup ", (*driver)->name());
  check.facts["driver"] = (*driver)->name();
  absl::StatusOr<std::unique_ptr<core::Cgroup>> cgroup =
      (*driver)->Create({kMemoryBytes, kPidsMax, kCpus});
  if (!cgroup.ok()) {
    return missing(absl::StrCat(
        name, ": cannot make a cgroup where a run would: ", cgroup.status().message()));
  }
  const std::vector<std::string> paths = (*cgroup)->paths();
  check.facts["paths"] = paths;
  Trial trial = TryCgroup(**cgroup);
  if (!trial.failure.empty()) return missing(absl::StrCat(name, ": ", trial.failure));
  check.facts["pids_max"] = kPidsMax + 0;
  check.facts["forks_allowed"] = trial.forks_allowed;
  check.facts["memory_peak_bytes"] = trial.memory_peak_bytes;
  // After Create, which carried the placement out (Prepare): where they really went.
  const core::CgroupPlacement& placement = (*driver)->placement();
  check.facts["placement"] = core::CgroupPlacementName(placement.kind);
  check.facts["placement_detail"] = placement.detail;
  check.facts["parent_dir"] = placement.parent_dir;
  check.detail =
      absl::StrCat(name, " (", core::CgroupPlacementName(placement.kind), ": ", placement.detail,
                   "), in ", absl::StrJoin(paths, ", "), ": limits written (memory 64 MiB, pids ",
                   kPidsMax, ", cpus 0.5), a child ",
                   trial.born_inside ? "born in it (CLONE_INTO_CGROUP)"
                                     : "that joined it itself (its tasks files)",
                   " found itself there and was refused its process ", kPidsMax + 1, "; removed");
  return check;
}

DoctorCheck CheckSandboxRun(const ProbedDriver& driver, bool allow_unlimited) {
  DoctorCheck check{"sandbox", "sandbox", CheckStatus::kOk, true, "every run"};
  core::Spec spec;
  spec.root = core::RootFs::Host();
  spec.argv = {"/bin/true"};
  spec.timeout_ms = 10'000;
  if (allow_unlimited) core::LooseningGrant::AllowUnlimited(spec.loosening);
  const std::string command =
      absl::StrCat("zygo run ", allow_unlimited ? "--allow-unlimited " : "", "host /bin/true");
  auto missing = [&](absl::string_view why) {
    check.status = CheckStatus::kMissing;
    check.detail = absl::StrCat(command, ": ", why);
    check.fix = "see the MISSING lines above";
    return check;
  };
  absl::StatusOr<core::Plan> plan = core::BuildPlan(spec);
  if (!plan.ok()) return missing(plan.status().message());
  base::UniqueFd null_fd(open("/dev/null", O_RDWR | O_CLOEXEC));
  core::LaunchOptions options;
  options.forward_signals = false;
  for (int& fd : options.stdio_fds) fd = null_fd.get();
  absl::StatusOr<core::Outcome> outcome =
      core::Launch(*plan, driver.ok() ? driver->get() : nullptr, options);
  if (!outcome.ok()) return missing(outcome.status().message());
  check.facts = {{"exit_code", outcome->exit_code},
                 {"status", core::OutcomeStatusName(outcome->status)},
                 {"cgroup_driver", outcome->cgroup_driver},
                 {"limits_applied", outcome->limits_applied},
                 {"cgroup_placement", outcome->cgroup_placement},
                 {"wall_ms", outcome->wall_ms}};
  if (outcome->status != core::OutcomeStatus::kOk) {
    return missing(absl::StrCat(core::OutcomeStatusName(outcome->status), ", exit ",
                                outcome->exit_code, outcome->error.empty() ? "" : ": ",
                                outcome->error));
  }
  check.detail = absl::StrFormat(
      "%s exited 0 in %.1f ms (%s)", command, outcome->wall_ms,
      outcome->limits_applied ? absl::StrCat("limits applied by cgroup ", outcome->cgroup_driver,
                                             ", ", outcome->cgroup_placement)
                              : "no limits applied");
  return check;
}

namespace {

// "zygo-812-3, zygo-812-5 and 2 more"
std::string Names(const std::vector<const core::StaleCgroup*>& cgroups) {
  constexpr size_t kShown = 8;
  std::vector<std::string> names;
  for (size_t i = 0; i < cgroups.size() && i < kShown; ++i) names.push_back(cgroups[i]->name);
  std::string text = absl::StrJoin(names, ", ");
  if (cgroups.size() > kShown) absl::StrAppend(&text, " and ", cgroups.size() - kShown, " more");
  return text;
}

}  // namespace

// Counts (and with `fix` removes) what killed zygo processes left, wherever they ran. Needs
// only the cgroup mounts: a cgroup without delegation, where CheckLimits finds no usable
// driver, is still swept.
DoctorCheck CheckStaleCgroups(bool fix) {
  DoctorCheck check{"stale_cgroups", "stale cgroups", CheckStatus::kOk, false, "information"};
  absl::StatusOr<std::vector<core::StaleCgroup>> found =
      core::SweepStaleCgroupsEverywhere({.remove = fix});
  if (!found.ok()) {
    check.detail = absl::StrCat("not looked for: ", found.status().message());
    return check;
  }
  std::vector<core::StaleCgroup> stale = *std::move(found);
  // A doctor killed halfway leaves its attempt's cgroup, named apart (kDoctorCgroupPrefix).
  absl::StatusOr<std::vector<core::StaleCgroup>> doctors =
      core::SweepStaleCgroupsEverywhere({.remove = fix}, "/sys/fs/cgroup", kDoctorCgroupPrefix);
  if (doctors.ok()) stale.insert(stale.end(), doctors->begin(), doctors->end());
  std::vector<const core::StaleCgroup*> removed, kept;
  for (const core::StaleCgroup& cgroup : stale) {
    (cgroup.removed ? removed : kept).push_back(&cgroup);
  }
  check.facts = {{"found", stale.size()}, {"removed", removed.size()}};
  if (stale.empty()) {
    check.detail = "none (cgroups a killed zygo left behind)";
  } else if (!fix) {
    check.detail = absl::StrCat(stale.size(), " found, of killed zygo processes: ", Names(kept),
                                " (zygo doctor --fix removes them)");
  } else {
    check.detail = absl::StrCat(removed.size(), " removed");
    if (!removed.empty()) absl::StrAppend(&check.detail, ": ", Names(removed));
    for (const core::StaleCgroup* cgroup : kept) {
      absl::StrAppend(&check.detail, "; kept ", cgroup->name, ": ", cgroup->kept_because);
    }
  }
  return check;
}

DoctorCheck CheckImages() {
  DoctorCheck check{"images", "images", CheckStatus::kOk, false, "information"};
  check.detail = absl::StrCat("store at ", images::Store::DefaultRoot(),
                              "; roots are flattened with hard links (no overlay mount per run)");
  check.facts = {{"store", images::Store::DefaultRoot()}};
  return check;
}

}  // namespace zygo::cli
