// `zygo doctor`'s "cgroup moves" line and its --fix: whether moving a process between
// cgroups is cheap here (cgroup2 mounted with favordynmods), and, asked on a terminal,
// the remount that makes it so now and the /etc/fstab line that keeps it at every boot.
// Never offered inside a container, where the mount is the host's. The decision is pure
// (DecideCgroupMoves, over facts a test can fake); reading the host and acting on it are
// separate functions.
#ifndef ZYGO_CLI_DOCTOR_CGROUP_MOVES_H_
#define ZYGO_CLI_DOCTOR_CGROUP_MOVES_H_

#include <stdio.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cli/doctor_check.h"

namespace zygo::cli {

// The topmost mount at a mount point, from /proc/self/mountinfo.
struct MountEntry {
  std::string mount_point;
  std::string fs_type;                     // "cgroup2"
  std::vector<std::string> mount_options;  // per mount: rw, nosuid, nodev, noexec, relatime
  std::vector<std::string> super_options;  // the filesystem's: rw, nsdelegate, favordynmods
};

// True when `options` (a MountEntry's list) has `option`.
bool HasOption(const std::vector<std::string>& options, absl::string_view option);

// The last (topmost) entry of a mountinfo text mounted at `mount_point`; nullopt if none.
std::optional<MountEntry> FindMount(absl::string_view mountinfo, absl::string_view mount_point);

// What a container leaves where a process can see it. Files that cannot be read are "".
struct ContainerProbe {
  bool dockerenv = false;             // /.dockerenv exists
  bool containerenv = false;          // /run/.containerenv exists (podman)
  std::string run_systemd_container;  // /run/systemd/container (systemd-nspawn, others)
  std::string pid1_environ;           // /proc/1/environ, NUL-separated (root only)
  std::string pid1_cgroup;            // /proc/1/cgroup
  std::string self_cgroup_ns;         // readlink /proc/self/ns/cgroup
  std::string pid1_cgroup_ns;         // readlink /proc/1/ns/cgroup ("" if not allowed)
  std::string detect_virt;            // `systemd-detect-virt -c` output, "" if not run
};

// Each sign of a container in `probe`, as text ("/.dockerenv exists"); empty: none seen.
std::vector<std::string> ContainerSigns(const ContainerProbe& probe);

struct CgroupMovesFacts {
  std::string kernel_release;          // uname -r
  std::optional<MountEntry> cgroup2;   // /sys/fs/cgroup when it is a cgroup2 mount
  std::vector<std::string> container;  // ContainerSigns
  bool root = false;                   // euid 0
  bool systemd = false;                // /run/systemd/system exists (systemd is PID 1)
  bool fstab_names_cgroup = false;     // /etc/fstab already has a /sys/fs/cgroup line
};

// The fix: the remount, as mount(2) takes it and as the user reads it.
struct RemountPlan {
  std::string mount_point;
  unsigned long flags = 0;  // MS_REMOUNT and the mount's own flags, kept as they are
  std::string data;         // the cgroup2 options it has, plus favordynmods
  std::string command;      // "mount -o remount,<options> /sys/fs/cgroup"
  std::string fstab_line;   // for /etc/fstab; "" when it already names the mount
};

enum class CgroupMovesState {
  kNotCgroup2,      // v1 (or no cgroup2 at /sys/fs/cgroup): not applicable
  kOldKernel,       // before Linux 6.0 the lock was always kept ready: cheap
  kOn,              // favordynmods is on: cheap
  kOffInContainer,  // off, and it is the host's setting
  kOffNeedsRoot,    // off, and only root may remount
  kOffFixable,      // off, and --fix can remount (`fix` is set)
};

struct CgroupMovesDecision {
  CgroupMovesState state = CgroupMovesState::kNotCgroup2;
  std::optional<RemountPlan> fix;
};

// Pure: what the line says and whether --fix may offer the remount.
CgroupMovesDecision DecideCgroupMoves(const CgroupMovesFacts& facts);

// The doctor line for a decision (`facts` for the detail).
DoctorCheck DescribeCgroupMoves(const CgroupMovesFacts& facts, const CgroupMovesDecision& decision);

// Reads the facts from this host (mountinfo, uname, the container signs; runs
// systemd-detect-virt only when nothing else decided). Reads only.
CgroupMovesFacts ReadCgroupMovesFacts();

// How --fix talks to the user and acts; the real ones are RealFixActions(), tests pass fakes.
struct FixActions {
  int answer_fd = 0;      // where the answer is read; asked only when it is a terminal
  FILE* prompt = stderr;  // where the question goes (stdout may carry --json)
  std::function<bool(int fd)> is_terminal;
  std::function<absl::Status(const RemountPlan& plan)> remount;
  std::function<absl::Status(const std::string& line)> append_fstab;
};

// isatty, mount(2) on the real mount point, appending to /etc/fstab.
FixActions RealFixActions();

// --fix for a fixable decision: asks y/N on a terminal and, on yes, remounts and (on a
// systemd host, unless fstab already names the mount) appends the fstab line. Without a
// terminal it asks nothing and does nothing. Returns what happened, for the line.
std::string OfferRemount(const RemountPlan& plan, bool systemd, const FixActions& actions);

}  // namespace zygo::cli

#endif  // ZYGO_CLI_DOCTOR_CGROUP_MOVES_H_
