#include "cli/doctor_command.h"

#include <linux/seccomp.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
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

}  // namespace

int DoctorCommand(int argc, char** argv) {
  if (argc > 0) {
    fprintf(stderr, "zygo: usage: zygo doctor\n");
    return 125;
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
  return all_ok ? 0 : 1;
}

}  // namespace zygo::cli
