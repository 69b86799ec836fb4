// The host side of the "cgroup moves" line: reading the facts DecideCgroupMoves takes,
// and the real --fix actions (isatty, mount(2), /etc/fstab). Tests never call the actions.
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli/doctor_cgroup_moves.h"
#include "core/base/errno_status.h"
#include "core/base/unique_fd.h"

extern char** environ;

namespace zygo::cli {
namespace {

constexpr char kCgroupRoot[] = "/sys/fs/cgroup";

std::string ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

bool Exists(const char* path) { return access(path, F_OK) == 0; }

std::string ReadLink(const char* path) {
  char target[PATH_MAX];
  ssize_t n = readlink(path, target, sizeof(target) - 1);
  return n > 0 ? std::string(target, static_cast<size_t>(n)) : "";
}

// `systemd-detect-virt -c`'s output, "" when it is not installed or says nothing.
std::string DetectVirt() {
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return "";
  base::UniqueFd read_end(out[0]), write_end(out[1]);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, write_end.get(), 1);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  char arg0[] = "systemd-detect-virt", arg1[] = "-c";
  char* argv[] = {arg0, arg1, nullptr};
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, arg0, &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  write_end.Reset();
  if (rc != 0) return "";
  std::string text;
  char buffer[128];
  ssize_t n;
  while ((n = read(read_end.get(), buffer, sizeof(buffer))) > 0 || (n < 0 && errno == EINTR)) {
    if (n > 0 && text.size() < 256) text.append(buffer, static_cast<size_t>(n));
  }
  while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  return text;
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
  auto has = [&](const std::string& option) {
    for (const std::string& value : after->super_options) {
      if (value == option) return true;
    }
    return false;
  };
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
