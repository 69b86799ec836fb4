// The kernel facilities every sandbox is made of, each attempted in a throwaway child:
// namespaces with id maps, the seccomp programs, the Landlock ruleset, and overlayfs.
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "cli/doctor_checks.h"
#include "cli/doctor_child.h"
#include "core/base/errno_status.h"
#include "core/host_features.h"
#include "core/identity.h"
#include "core/landlock.h"
#include "core/seccomp_compiled.h"
#include "core/seccomp_policy.h"

namespace zygo::cli {
namespace {

constexpr uint64_t kRunNamespaces = CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET |
                                    CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP;

// The first line of a /proc/sys file, "" when it cannot be read (read only, as a hint).
std::string ReadSysctl(const char* path) {
  std::ifstream file(path);
  std::string line;
  std::getline(file, line);
  return std::string(absl::StripAsciiWhitespace(line));
}

// Why the kernel refused a user namespace, from the settings that do it (read, never set).
std::string UsernsRefusalHint(int err) {
  if (ReadSysctl("/proc/sys/user/max_user_namespaces") == "0") {
    return "user.max_user_namespaces is 0 (the admin must raise it)";
  }
  if (geteuid() != 0 && ReadSysctl("/proc/sys/kernel/unprivileged_userns_clone") == "0") {
    return "kernel.unprivileged_userns_clone is 0: ordinary users may not make user "
           "namespaces here (the admin can set it to 1, or run zygo as root)";
  }
  if (geteuid() != 0 &&
      ReadSysctl("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1") {
    return "AppArmor restricts unprivileged user namespaces "
           "(kernel.apparmor_restrict_unprivileged_userns=1): give zygo an AppArmor profile "
           "that allows userns, or run it as root";
  }
  if (err == ENOSPC) return "the limit of user namespaces is reached";
  return "inside a container, run it with user namespaces allowed (docker: "
         "--security-opt seccomp=unconfined, or a runtime that permits clone(CLONE_NEWUSER))";
}

void UsernsBody(const void*, ChildReport* report) {
  if (getuid() != 0 || getgid() != 0) {
    report->step = 1;
    report->value = getuid();
    return;
  }
  if (getpid() != 1) {
    report->step = 2;
    report->value = getpid();
    return;
  }
  // The sandbox's first mount step: only a mount namespace this user namespace owns allows it.
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    report->step = 3;
    report->err = errno;
  }
}

// Calls the seccomp check tries: what a raw syscall returns, as 0 or -errno.
long RawResult(long rc) { return rc < 0 ? -errno : rc; }

void SeccompBody(const void* arg, ChildReport* report) {
  const auto* programs = static_cast<const core::SeccompPrograms*>(arg);
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    *report = {1, errno};
    return;
  }
  // Control, before this filter: the kernel itself refuses setns on a bad fd with EBADF
  // (a filter already in place, a container's, may refuse it first).
  long setns_before = RawResult(syscall(SYS_setns, -1, 0));
  if (setns_before != -EBADF) {
    *report = {2, static_cast<int32_t>(-setns_before)};
    return;
  }
  int listener = -1;
  core::ChildFailure failure = core::InstallSeccompInChild(*programs, false, &listener);
  if (!failure.ok()) {
    *report = {3, failure.err};
    return;
  }
  report->value = listener >= 0 ? 1 : 0;
  // Under the filter: clone3 gets ENOSYS (libc falls back to clone), setns EPERM.
  long clone3_after = RawResult(syscall(SYS_clone3, nullptr, 0));
  if (clone3_after != -ENOSYS) {
    report->step = 4;
    report->err = static_cast<int32_t>(-clone3_after);
    return;
  }
  long setns_after = RawResult(syscall(SYS_setns, -1, 0));
  if (setns_after != -EPERM) {
    report->step = 5;
    report->err = static_cast<int32_t>(-setns_after);
  }
}

struct LandlockArgs {
  const core::LandlockPlan* plan;
};

void LandlockBody(const void* arg, ChildReport* report) {
  const core::LandlockPlan& plan = *static_cast<const LandlockArgs*>(arg)->plan;
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    *report = {1, errno};
    return;
  }
  // Control: this process may open its own comm for writing (nothing is written).
  int fd = open("/proc/self/comm", O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    *report = {2, errno};
    return;
  }
  close(fd);
  core::ChildFailure failure = core::ApplyLandlockInChild(plan);
  if (!failure.ok()) {
    *report = {3, failure.err};
    return;
  }
  fd = open("/proc/self/comm", O_WRONLY | O_CLOEXEC);
  if (fd >= 0 || errno != EACCES) {
    *report = {4, fd >= 0 ? 0 : errno};
    if (fd >= 0) close(fd);
    return;
  }
  // Reading is still allowed everywhere, and writing /dev/null (the ruleset's /dev rule).
  fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    *report = {5, errno};
    return;
  }
  close(fd);
  if (plan.scoped != 0) {
    // ABI 6 signal scoping: the parent is outside the domain (signal 0 sends nothing).
    if (kill(getppid(), 0) == 0 || errno != EPERM) {
      *report = {6, errno};
      return;
    }
    report->value = 1;
  }
}

int MkdirAll(const char* const* dirs) {
  for (; *dirs != nullptr; ++dirs) {
    if (mkdir(*dirs, 0700) != 0) return errno;
  }
  return 0;
}

void OverlayBody(const void*, ChildReport* report) {
  // All of this is in the child's own mount namespace, on a tmpfs of its own.
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    *report = {1, errno};
    return;
  }
  if (mount("zygo-doctor", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0700") != 0) {
    *report = {2, errno};
    return;
  }
  const char* const dirs[] = {"/tmp/lower", "/tmp/upper", "/tmp/work", "/tmp/merged", nullptr};
  if (int err = MkdirAll(dirs); err != 0) {
    *report = {3, err};
    return;
  }
  int fd = open("/tmp/lower/file", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    *report = {4, errno};
    return;
  }
  close(fd);
  const char* options = "lowerdir=/tmp/lower,upperdir=/tmp/upper,workdir=/tmp/work";
  if (mount("overlay", "/tmp/merged", "overlay", 0, options) != 0) {
    // Unprivileged overlay mounts may need the user.* xattr namespace (Linux 5.11+).
    options = "lowerdir=/tmp/lower,upperdir=/tmp/upper,workdir=/tmp/work,userxattr";
    if (mount("overlay", "/tmp/merged", "overlay", 0, options) != 0) {
      *report = {5, errno};
      return;
    }
    report->value = 1;
  }
  // A write through the overlay copies the lower file up.
  fd = open("/tmp/merged/file", O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0 || write(fd, "x", 1) != 1) {
    *report = {6, errno};
    if (fd >= 0) close(fd);
    return;
  }
  close(fd);
  if (access("/tmp/upper/file", F_OK) != 0) *report = {7, errno};
}

}  // namespace

DoctorCheck CheckKernel() {
  DoctorCheck check{"kernel", "kernel", CheckStatus::kOk, false, "information"};
  struct utsname host;
  uname(&host);
  check.detail = absl::StrCat(host.sysname, " ", host.release, " (", host.machine, ")");
  check.facts = {{"release", host.release}, {"machine", host.machine}};
  return check;
}

DoctorCheck CheckRunningAs() {
  DoctorCheck check{"running_as", "running as", CheckStatus::kOk, false, "information"};
  const bool root = geteuid() == 0;
  check.detail = root ? "root" : absl::StrCat("uid ", geteuid(), ", an ordinary user (rootless)");
  check.facts = {{"uid", geteuid()}, {"root", root}};
  return check;
}

DoctorCheck CheckUserNamespaces() {
  DoctorCheck check{"user_namespaces", "user namespaces", CheckStatus::kOk, true, "every run"};
  ChildAttempt attempt;
  attempt.clone_flags = kRunNamespaces;
  attempt.write_id_maps = true;
  attempt.body = UsernsBody;
  absl::StatusOr<ChildOutcome> outcome = RunChildAttempt(attempt);
  const std::string outside = geteuid() == 0 ? "0" : absl::StrCat(geteuid());
  if (!outcome.ok()) {
    check.status = CheckStatus::kMissing;
    check.detail = std::string(outcome.status().message());
    const int err = absl::IsPermissionDenied(outcome.status())    ? EPERM
                    : absl::IsResourceExhausted(outcome.status()) ? ENOSPC
                                                                  : 0;
    check.fix = UsernsRefusalHint(err);
    return check;
  }
  static const char* const kSteps[] = {"", "the child was not root inside (maps not applied)",
                                       "the child was not pid 1 of its pid namespace",
                                       "mount(/, MS_REC|MS_PRIVATE) in its mount namespace"};
  if (std::optional<std::string> failure = AttemptFailure(outcome, kSteps)) {
    check.status = CheckStatus::kMissing;
    check.detail = *std::move(failure);
    check.fix = UsernsRefusalHint(outcome->report.err);
    return check;
  }
  check.detail = absl::StrCat(
      "a child in new user, pid, mount, net, ipc, uts and cgroup namespaces was root (uid 0 ",
      "is ", outside, " outside) and pid 1, and could mount");
  check.facts = {{"namespaces", {"user", "pid", "mount", "net", "ipc", "uts", "cgroup"}},
                 {"root_maps_to", geteuid()}};
  return check;
}

DoctorCheck CheckSeccomp() {
  DoctorCheck check{"seccomp", "seccomp", CheckStatus::kOk, true, "every run"};
  const core::SeccompPrograms programs = core::CompiledSeccompPrograms();
  ChildAttempt attempt;
  attempt.body = SeccompBody;
  attempt.arg = &programs;
  absl::StatusOr<ChildOutcome> outcome = RunChildAttempt(attempt);
  static const char* const kSteps[] = {
      "",
      "prctl(PR_SET_NO_NEW_PRIVS)",
      "the control setns(-1) did not fail with EBADF before the filter (a filter already "
      "refuses it)",
      "installing the sandbox's filter (seccomp(SECCOMP_SET_MODE_FILTER))",
      "clone3 was not refused with ENOSYS under the filter",
      "setns was not refused with EPERM under the filter"};
  if (std::optional<std::string> failure = AttemptFailure(outcome, kSteps)) {
    check.status = CheckStatus::kMissing;
    check.detail = *std::move(failure);
    check.fix = outcome.ok() && outcome->reported && outcome->report.step == 2
                    ? "a seccomp filter is already in place (a container's profile, or a "
                      "sandbox): run zygo where setns, clone3 and seccomp(2) are allowed"
                    : "a kernel with CONFIG_SECCOMP_FILTER; in a container, one whose own "
                      "seccomp profile allows seccomp(2)";
    return check;
  }
  const bool listener = outcome->report.value != 0;
  check.detail = absl::StrCat(
      "a child installed the sandbox's filter (", programs.allowed_syscalls,
      " syscalls allowed) and was refused clone3 (ENOSYS) and setns (EPERM)",
      listener ? "; foreign-ABI calls go to zygo-init's listener"
               : "; a listener is already taken (a container's seccomp agent): foreign-ABI "
                 "calls are killed by the kernel");
  check.facts = {{"allowed_syscalls", programs.allowed_syscalls}, {"listener", listener}};
  return check;
}

DoctorCheck CheckLandlock() {
  DoctorCheck check{"landlock", "landlock", CheckStatus::kOk, false,
                    "defence in depth (runs work without it)"};
  const int abi = core::ProbeHostFeatures().landlock_abi;
  check.facts = {{"abi", abi}};
  if (abi <= 0) {
    check.status = CheckStatus::kMissing;
    check.detail = "not enabled in this kernel: a layer less";
    check.fix = "boot with lsm=...,landlock (CONFIG_SECURITY_LANDLOCK, Linux 5.13+)";
    return check;
  }
  const core::LandlockPlan plan = core::BuildLandlockPlan(abi, {});
  LandlockArgs args{&plan};
  ChildAttempt attempt;
  attempt.body = LandlockBody;
  attempt.arg = &args;
  absl::StatusOr<ChildOutcome> outcome = RunChildAttempt(attempt);
  static const char* const kSteps[] = {
      "",
      "prctl(PR_SET_NO_NEW_PRIVS)",
      "the control open(/proc/self/comm, O_WRONLY) was refused before the sandbox's ruleset "
      "(one already in place?)",
      "applying the sandbox's ruleset (landlock_restrict_self)",
      "open(/proc/self/comm, O_WRONLY) was not refused with EACCES under the ruleset",
      "open(/dev/null, O_WRONLY) was refused under the ruleset",
      "kill(parent, 0) was not refused with EPERM (signal scoping)"};
  if (std::optional<std::string> failure = AttemptFailure(outcome, kSteps)) {
    check.status = CheckStatus::kMissing;
    check.detail = *std::move(failure);
    check.fix = "runs still work; a kernel with a working Landlock adds the layer back";
    return check;
  }
  const bool scoped = outcome->report.value != 0;
  check.detail =
      absl::StrCat("ABI ", abi, ": a child under the sandbox's ruleset was refused a ",
                   "write it could make before", scoped ? ", and signals out of it (scoping)" : "");
  check.facts["scoped_signals"] = scoped;
  return check;
}

DoctorCheck CheckOverlayfs() {
  DoctorCheck check{"overlayfs", "overlayfs", CheckStatus::kOk, false,
                    "nothing in zygo run (image roots are flattened with hard links)"};
  ChildAttempt attempt;
  attempt.clone_flags = CLONE_NEWUSER | CLONE_NEWNS;
  attempt.write_id_maps = true;
  attempt.body = OverlayBody;
  absl::StatusOr<ChildOutcome> outcome = RunChildAttempt(attempt);
  static const char* const kSteps[] = {"",
                                       "mount(/, MS_REC|MS_PRIVATE)",
                                       "mount(tmpfs on /tmp) in its mount namespace",
                                       "mkdir on that tmpfs",
                                       "creating the lower file",
                                       "mount(overlay)",
                                       "writing through the overlay",
                                       "the write was not copied up"};
  if (std::optional<std::string> failure = AttemptFailure(outcome, kSteps)) {
    check.status = CheckStatus::kMissing;
    check.detail = *std::move(failure);
    check.fix =
        "nothing needed: zygo does not mount overlays (overlayfs in a user namespace "
        "needs Linux 5.11+)";
    return check;
  }
  const bool userxattr = outcome->report.value != 0;
  check.detail = absl::StrCat("a child mounted an overlay in its own user and mount namespaces",
                              userxattr ? " (with userxattr)" : "",
                              " and a write copied a file up; unused by zygo run");
  check.facts = {{"userxattr", userxattr}};
  return check;
}

}  // namespace zygo::cli
