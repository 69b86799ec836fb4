#include "cli/doctor_command.h"

#include <linux/seccomp.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/cgroup.h"
#include "core/landlock.h"
#include "images/store.h"

namespace zygo::cli {
namespace {

struct Check {
  bool ok;
  std::string detail;
};

void Print(const char* name, const Check& check) {
  printf("%-16s %-4s %s\n", name, check.ok ? "ok" : "MISSING", check.detail.c_str());
}

Check UserNamespaces() {
  std::ifstream file("/proc/sys/user/max_user_namespaces");
  long max = 0;
  file >> max;
  if (max <= 0) {
    return {false, "user.max_user_namespaces is 0: sandboxes cannot be made (ask the admin)"};
  }
  return {true, absl::StrCat("available (max ", max, ")")};
}

Check Cgroups() {
  auto driver = core::ProbeCgroupDriver();
  if (!driver.ok()) {
    return {false, absl::StrCat(driver.status().message(),
                                "; zygo run refuses without --allow-unlimited")};
  }
  return {true, absl::StrCat("cgroup ", (*driver)->name(),
                             (*driver)->version() == core::CgroupVersion::kV2
                                 ? " (children born in their cgroup with CLONE_INTO_CGROUP)"
                                 : " (hybrid: memory, pids, cpu hierarchies)")};
}

Check Seccomp() {
  // PR_GET_SECCOMP answers 0 when filters are available and none is installed.
  int mode = prctl(PR_GET_SECCOMP, 0, 0, 0, 0);
  if (mode < 0) return {false, "the kernel has no seccomp"};
  return {true, "filters available"};
}

Check Landlock() {
  int abi = core::ProbeLandlockAbi();
  if (abi <= 0) return {false, "not enabled in this kernel (lsm=...,landlock): a layer less"};
  return {true, absl::StrCat("ABI ", abi, abi >= 6 ? " (with signal and socket scoping)" : "")};
}

constexpr char kUsage[] =
    "Usage: zygo doctor [--fix]\n"
    "\n"
    "Says what this host gives zygo: user namespaces, the cgroup driver, seccomp, Landlock,\n"
    "the image store; and counts the stale cgroups killed zygo processes left anywhere in\n"
    "the cgroup hierarchy (named zygo-PID-N, their PID gone). Exits 0 when zygo run can\n"
    "work here, 1 when something it needs is missing.\n"
    "\n"
    "Options:\n"
    "  --fix        also remove those stale cgroups, with the cgroups nested in them; one\n"
    "               that still holds a process, or a cgroup zygo did not name, is kept\n"
    "  -h, --help   this text\n";

// "zygo-812-3, zygo-812-5 and 2 more"
std::string Names(const std::vector<const core::StaleCgroup*>& cgroups) {
  constexpr size_t kShown = 8;
  std::vector<std::string> names;
  for (size_t i = 0; i < cgroups.size() && i < kShown; ++i) names.push_back(cgroups[i]->name);
  std::string text = absl::StrJoin(names, ", ");
  if (cgroups.size() > kShown) absl::StrAppend(&text, " and ", cgroups.size() - kShown, " more");
  return text;
}

// Counts (and with `fix` removes) what killed zygo processes left, wherever they ran. Needs
// only the cgroup mounts: a cgroup without delegation, where Cgroups() finds no usable
// driver, is still swept.
Check StaleCgroups(bool fix) {
  absl::StatusOr<std::vector<core::StaleCgroup>> found =
      core::SweepStaleCgroupsEverywhere({.remove = fix});
  if (!found.ok()) return {true, absl::StrCat("not looked for: ", found.status().message())};
  const std::vector<core::StaleCgroup>& stale = *found;
  if (stale.empty()) return {true, "none (cgroups a killed zygo left behind)"};
  std::vector<const core::StaleCgroup*> removed, kept;
  for (const core::StaleCgroup& cgroup : stale) {
    (cgroup.removed ? removed : kept).push_back(&cgroup);
  }
  if (!fix) {
    return {true, absl::StrCat(stale.size(), " found, of killed zygo processes: ", Names(kept),
                               " (zygo doctor --fix removes them)")};
  }
  std::string detail = absl::StrCat(removed.size(), " removed");
  if (!removed.empty()) absl::StrAppend(&detail, ": ", Names(removed));
  for (const core::StaleCgroup* cgroup : kept) {
    absl::StrAppend(&detail, "; kept ", cgroup->name, ": ", cgroup->kept_because);
  }
  return {true, detail};
}

}  // namespace

int DoctorCommand(int argc, char** argv) {
  bool fix = false;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      fputs(kUsage, stdout);
      return 0;
    }
    if (arg != "--fix") {
      fprintf(stderr, "zygo: doctor: unknown argument '%s'; usage: zygo doctor [--fix]\n",
              arg.c_str());
      return 125;
    }
    fix = true;
  }
  struct utsname host;
  uname(&host);
  printf("%-16s %-4s %s %s (%s)\n", "kernel", "ok", host.sysname, host.release, host.machine);
  Check checks[] = {UserNamespaces(), Cgroups(), Seccomp(), Landlock()};
  const char* names[] = {"user namespaces", "limits", "seccomp", "landlock"};
  bool all_ok = true;
  for (size_t i = 0; i < 4; ++i) {
    Print(names[i], checks[i]);
    // Landlock is defence in depth: zygo runs without it.
    if (!checks[i].ok && i != 3) all_ok = false;
  }
  Print("images", {true, absl::StrCat("store at ", images::Store::DefaultRoot(),
                                      "; roots are flattened with hard links (no overlay "
                                      "mount per run)")});
  Print("running as", {true, geteuid() == 0 ? "root" : "an ordinary user (rootless)"});
  Print("stale cgroups", StaleCgroups(fix));
  return all_ok ? 0 : 1;
}

}  // namespace zygo::cli
