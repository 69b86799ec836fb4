// The host side of the "cgroup moves" line: reading the facts DecideCgroupMoves takes,
// and the real --fix actions (isatty, mount(2), /etc/fstab). Tests never call the actions.
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/mount.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli/doctor_cgroup_moves.h"
#include "core/base/errno_status.h"
#include "core/base/run_program.h"
#include "core/base/sys/fs.h"
#include "core/base/unique_fd.h"

namespace zygo::cli {
namespace {

constexpr char kCgroupRoot[] = "/sys/fs/cgroup";

// The whole file, or "" when it cannot be read (a sign that is absent).
std::string ReadFile(const std::string& path) { return base::sys::ReadFile(path).value_or(""); }

bool Exists(const char* path) { return base::sys::Stat(path).ok(); }

std::string ReadLink(const char* path) {
  char target[PATH_MAX];
  ssize_t n = readlink(path, target, sizeof(target) - 1);
  return n > 0 ? std::string(target, static_cast<size_t>(n)) : "";
}

// `systemd-detect-virt -c`'s output, "" when it is not installed or says nothing.
std::string DetectVirt() {
  absl::StatusOr<base::ProgramRun> run =
      base::RunProgram({"systemd-detect-virt", "-c"}, /*with_stderr=*/false, 256);
  return run.ok() ? run->output : "";
}

bool FstabNamesCgroupRoot(const std::string& fstab) {
  for (absl::string_view line : absl::StrSplit(fstab, '\n', absl::SkipEmpty())) {
    std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (fields.size() >= 2 && fields[0][0] != '#' && fields[1] == kCgroupRoot) return true;
  }
  return false;
}

// mount(2) as the plan says, then the mount table read back: favordynmods must be on and
// every option it had still there.
absl::Status Remount(const RemountPlan& plan) {
  std::optional<MountEntry> before = FindMount(ReadFile("/proc/self/mountinfo"), plan.mount_point);
  if (mount(nullptr, plan.mount_point.c_str(), nullptr, plan.flags, plan.data.c_str()) != 0) {
    return base::ErrnoStatus(
        errno, absl::StrCat("mount(", plan.mount_point, ", MS_REMOUNT, \"", plan.data, "\")"));
  }
  std::optional<MountEntry> after = FindMount(ReadFile("/proc/self/mountinfo"), plan.mount_point);
  if (!after.has_value()) return absl::InternalError("the mount is gone from /proc/self/mountinfo");
  auto has = [&](const std::string& option) { return HasOption(after->super_options, option); };
  if (!has("favordynmods")) {
    return absl::InternalError("the kernel took the remount but shows no favordynmods");
  }
  if (before.has_value()) {
    for (const std::string& option : before->super_options) {
      if (!has(option)) return absl::InternalError(absl::StrCat("the remount dropped ", option));
    }
  }
  return absl::OkStatus();
}

absl::Status AppendFstab(const std::string& line) {
  const std::string existing = ReadFile("/etc/fstab");
  base::UniqueFd fd(open("/etc/fstab", O_WRONLY | O_APPEND | O_CLOEXEC));
  if (!fd.valid()) return base::ErrnoStatus(errno, "open(/etc/fstab, O_APPEND)");
  std::string text =
      absl::StrCat(!existing.empty() && existing.back() != '\n' ? "\n" : "",
                   "# zygo doctor --fix: cheap cgroup moves (favordynmods)\n", line, "\n");
  if (write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    return base::ErrnoStatus(errno, "write(/etc/fstab)");
  }
  return absl::OkStatus();
}

}  // namespace

CgroupMovesFacts ReadCgroupMovesFacts() {
  CgroupMovesFacts facts;
  struct utsname host;
  if (uname(&host) == 0) facts.kernel_release = host.release;
  std::optional<MountEntry> mount = FindMount(ReadFile("/proc/self/mountinfo"), kCgroupRoot);
  if (mount.has_value() && mount->fs_type == "cgroup2") facts.cgroup2 = std::move(mount);
  facts.root = geteuid() == 0;
  facts.systemd = Exists("/run/systemd/system");
  facts.fstab_names_cgroup = FstabNamesCgroupRoot(ReadFile("/etc/fstab"));
  ContainerProbe probe;
  probe.dockerenv = Exists("/.dockerenv");
  probe.containerenv = Exists("/run/.containerenv");
  probe.run_systemd_container = ReadFile("/run/systemd/container");
  probe.pid1_environ = ReadFile("/proc/1/environ");
  probe.pid1_cgroup = ReadFile("/proc/1/cgroup");
  probe.self_cgroup_ns = ReadLink("/proc/self/ns/cgroup");
  probe.pid1_cgroup_ns = ReadLink("/proc/1/ns/cgroup");
  facts.container = ContainerSigns(probe);
  // The one sign that costs an exec, asked only when it alone would decide: a fix is
  // about to be offered.
  if (facts.container.empty() && DecideCgroupMoves(facts).state == CgroupMovesState::kOffFixable) {
    probe.detect_virt = DetectVirt();
    facts.container = ContainerSigns(probe);
  }
  return facts;
}

FixActions RealFixActions() {
  FixActions actions;
  actions.is_terminal = [](int fd) { return isatty(fd) == 1; };
  actions.remount = Remount;
  actions.append_fstab = AppendFstab;
  return actions;
}

}  // namespace zygo::cli
