#include "cli/doctor_cgroup_moves.h"

#include <stdio.h>
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace zygo::cli {
namespace {

constexpr char kOption[] = "favordynmods";

// Linux 6.0 made the lock's writer path slow by default and added favordynmods; before,
// the kernel kept it ready for writers all the time. Unparsable releases count as new.
bool BeforeLinux6(absl::string_view release) {
  int major = 0;
  std::vector<std::string> parts = absl::StrSplit(release, absl::MaxSplits('.', 1));
  return !parts.empty() && absl::SimpleAtoi(parts[0], &major) && major > 0 && major < 6;
}

// The mount(2) flag of a per-mount option, 0 for "rw" and anything mount(2) has no flag for.
unsigned long MountFlag(absl::string_view option) {
  static const std::pair<const char*, unsigned long> kFlags[] = {{"ro", MS_RDONLY},
                                                                 {"nosuid", MS_NOSUID},
                                                                 {"nodev", MS_NODEV},
                                                                 {"noexec", MS_NOEXEC},
                                                                 {"relatime", MS_RELATIME},
                                                                 {"noatime", MS_NOATIME},
                                                                 {"nodiratime", MS_NODIRATIME},
                                                                 {"strictatime", MS_STRICTATIME},
                                                                 {"sync", MS_SYNCHRONOUS}};
  for (const auto& [name, flag] : kFlags) {
    if (option == name) return flag;
  }
  return 0;
}

// A remount that keeps everything the mount has and adds favordynmods. cgroup2 replaces
// all of its own options on reconfigure (nsdelegate, memory_recursiveprot, ... are cleared
// unless given again), and a MS_REMOUNT resets the per-mount flags it is not given, so
// both lists are passed back in full.
RemountPlan BuildRemountPlan(const MountEntry& mount, bool fstab_names_cgroup) {
  RemountPlan plan;
  plan.mount_point = mount.mount_point;
  plan.flags = MS_REMOUNT;
  std::vector<std::string> per_mount;
  for (const std::string& option : mount.mount_options) {
    plan.flags |= MountFlag(option);
    if (option != "rw") per_mount.push_back(option);
  }
  std::vector<std::string> data;
  for (const std::string& option : mount.super_options) {
    if (option != "rw" && option != "ro") data.push_back(option);
  }
  data.push_back(kOption);
  plan.data = absl::StrJoin(data, ",");
  std::vector<std::string> all = per_mount;
  all.insert(all.end(), data.begin(), data.end());
  plan.command = absl::StrCat("mount -o remount,", absl::StrJoin(all, ","), " ", mount.mount_point);
  if (!fstab_names_cgroup) {
    plan.fstab_line = absl::StrCat("cgroup2 ", mount.mount_point, " cgroup2 ",
                                   HasOption(mount.mount_options, "ro") ? "ro," : "rw,",
                                   absl::StrJoin(all, ","), " 0 0");
  }
  return plan;
}

constexpr char kWhySlow[] =
    "cgroup2 is mounted without favordynmods: moving a process into a cgroup (what a warm "
    "request forked inside its sandbox, the agent path, needs) can wait several ms for the "
    "kernel";

}  // namespace

bool HasOption(const std::vector<std::string>& options, absl::string_view option) {
  return std::find(options.begin(), options.end(), option) != options.end();
}

std::optional<MountEntry> FindMount(absl::string_view mountinfo, absl::string_view mount_point) {
  std::optional<MountEntry> found;
  for (absl::string_view line : absl::StrSplit(mountinfo, '\n', absl::SkipEmpty())) {
    // "ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER_OPTIONS"
    std::vector<absl::string_view> halves = absl::StrSplit(line, absl::MaxSplits(" - ", 1));
    if (halves.size() != 2) continue;
    std::vector<absl::string_view> left = absl::StrSplit(halves[0], ' ');
    std::vector<absl::string_view> right = absl::StrSplit(halves[1], ' ');
    if (left.size() < 6 || right.size() < 3 || left[4] != mount_point) continue;
    MountEntry entry;
    entry.mount_point = std::string(left[4]);
    entry.fs_type = std::string(right[0]);
    entry.mount_options = absl::StrSplit(left[5], ',', absl::SkipEmpty());
    entry.super_options = absl::StrSplit(right[2], ',', absl::SkipEmpty());
    found = std::move(entry);  // a later line is mounted over an earlier one
  }
  return found;
}

std::vector<std::string> ContainerSigns(const ContainerProbe& probe) {
  std::vector<std::string> signs;
  if (probe.dockerenv) signs.push_back("/.dockerenv exists");
  if (probe.containerenv) signs.push_back("/run/.containerenv exists");
  if (std::string kind(absl::StripAsciiWhitespace(probe.run_systemd_container)); !kind.empty()) {
    signs.push_back(absl::StrCat("/run/systemd/container says ", kind));
  }
  for (absl::string_view var : absl::StrSplit(probe.pid1_environ, '\0', absl::SkipEmpty())) {
    if (absl::ConsumePrefix(&var, "container=")) {
      signs.push_back(absl::StrCat("PID 1's environment has container=", var));
    }
  }
  if (!probe.self_cgroup_ns.empty() && !probe.pid1_cgroup_ns.empty() &&
      probe.self_cgroup_ns != probe.pid1_cgroup_ns) {
    signs.push_back("this process's cgroup namespace is not PID 1's");
  }
  std::string runtime_cgroup;
  for (absl::string_view line : absl::StrSplit(probe.pid1_cgroup, '\n', absl::SkipEmpty())) {
    std::vector<absl::string_view> fields = absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (fields.size() != 3 || !runtime_cgroup.empty()) continue;
    for (const char* runtime : {"docker", "lxc", "kubepods", "libpod", "containerd", "crio"}) {
      if (absl::StrContains(fields[2], runtime)) runtime_cgroup = std::string(fields[2]);
    }
  }
  if (!runtime_cgroup.empty()) signs.push_back(absl::StrCat("PID 1's cgroup is ", runtime_cgroup));
  if (std::string virt(absl::StripAsciiWhitespace(probe.detect_virt));
      !virt.empty() && virt != "none") {
    signs.push_back(absl::StrCat("systemd-detect-virt -c says ", virt));
  }
  return signs;
}

CgroupMovesDecision DecideCgroupMoves(const CgroupMovesFacts& facts) {
  if (!facts.cgroup2.has_value()) return {CgroupMovesState::kNotCgroup2, std::nullopt};
  if (BeforeLinux6(facts.kernel_release)) return {CgroupMovesState::kOldKernel, std::nullopt};
  if (HasOption(facts.cgroup2->super_options, kOption))
    return {CgroupMovesState::kOn, std::nullopt};
  // Inside a container the mount is the host's, and a remount from a cgroup namespace
  // other than the host's changes nothing (kernel/cgroup/cgroup.c, apply_cgroup_root_flags).
  if (!facts.container.empty()) return {CgroupMovesState::kOffInContainer, std::nullopt};
  if (!facts.root) return {CgroupMovesState::kOffNeedsRoot, std::nullopt};
  return {CgroupMovesState::kOffFixable,
          BuildRemountPlan(*facts.cgroup2, facts.fstab_names_cgroup)};
}

DoctorCheck DescribeCgroupMoves(const CgroupMovesFacts& facts,
                                const CgroupMovesDecision& decision) {
  DoctorCheck check{"cgroup_moves", "cgroup moves", CheckStatus::kOk, false,
                    "the warm path's speed (1 in 100 agent-path requests)"};
  check.facts = {{"cgroup2", facts.cgroup2.has_value()},
                 {"favordynmods",
                  facts.cgroup2.has_value() && HasOption(facts.cgroup2->super_options, kOption)},
                 {"container_signs", facts.container},
                 {"remount_command", decision.fix ? decision.fix->command : ""}};
  switch (decision.state) {
    case CgroupMovesState::kNotCgroup2:
      check.status = CheckStatus::kNotApplicable;
      check.detail =
          "no cgroup2 at /sys/fs/cgroup: favordynmods is a cgroup2 mount option (on "
          "v1 each sandbox joins its cgroups by writing their tasks files)";
      break;
    case CgroupMovesState::kOldKernel:
      check.detail =
          absl::StrCat("Linux ", facts.kernel_release,
                       " keeps cgroup moves cheap without favordynmods (6.0 changed it)");
      break;
    case CgroupMovesState::kOn:
      check.detail = "cheap: cgroup2 is mounted with favordynmods";
      break;
    case CgroupMovesState::kOffInContainer:
      check.status = CheckStatus::kMissing;
      check.detail =
          absl::StrCat(kWhySlow, "; this is a container (", absl::StrJoin(facts.container, "; "),
                       "), where the mount is the host's");
      check.fix = "on the host itself: zygo doctor --fix";
      break;
    case CgroupMovesState::kOffNeedsRoot:
      check.status = CheckStatus::kMissing;
      check.detail = kWhySlow;
      check.fix = "as root: zygo doctor --fix (it asks before it remounts)";
      break;
    case CgroupMovesState::kOffFixable:
      check.status = CheckStatus::kMissing;
      check.detail = kWhySlow;
      check.fix =
          absl::StrCat("zygo doctor --fix offers ", decision.fix->command, " (it asks first)");
      break;
  }
  return check;
}

std::string OfferRemount(const RemountPlan& plan, bool systemd, const FixActions& actions) {
  const bool persist = systemd && !plan.fstab_line.empty();
  std::string boot =
      persist ? absl::StrCat("; for every boot, add to /etc/fstab: ", plan.fstab_line) : "";
  if (!actions.is_terminal(actions.answer_fd)) {
    return absl::StrCat("not remounted: no terminal to ask on. It would run: ", plan.command, boot);
  }
  fprintf(actions.prompt,
          "zygo doctor: cgroup moves are slow here (cgroup2 without favordynmods).\n"
          "  now:        %s\n"
          "%s%s%s"
          "favordynmods is a setting of the whole machine: every fork and exit takes a slightly\n"
          "slower path (a bare fork-and-wait measured 106 -> 108 us). Turn it on? [y/N] ",
          plan.command.c_str(), persist ? "  every boot: append to /etc/fstab: " : "",
          persist ? plan.fstab_line.c_str() : "", persist ? "\n" : "");
  fflush(actions.prompt);
  std::string answer;
  char c;
  while (answer.size() < 16 && read(actions.answer_fd, &c, 1) == 1 && c != '\n') answer += c;
  answer = absl::AsciiStrToLower(absl::StripAsciiWhitespace(answer));
  if (answer != "y" && answer != "yes") return "not remounted (the answer was no)";
  absl::Status remounted = actions.remount(plan);
  if (!remounted.ok()) return absl::StrCat("the remount failed: ", remounted.message());
  if (!systemd) {
    return "remounted with favordynmods (until the next boot: add it where your init mounts "
           "cgroup2 to keep it)";
  }
  if (plan.fstab_line.empty()) {
    return "remounted with favordynmods; /etc/fstab already names /sys/fs/cgroup: add "
           "favordynmods to its options to keep it at boot";
  }
  absl::Status appended = actions.append_fstab(plan.fstab_line);
  if (!appended.ok()) {
    return absl::StrCat("remounted with favordynmods, but /etc/fstab was not changed (",
                        appended.message(), "): it is lost at the next boot");
  }
  return "remounted with favordynmods; /etc/fstab keeps it at every boot";
}

}  // namespace zygo::cli
