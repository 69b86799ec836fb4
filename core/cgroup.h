// Resource limits for one sandbox, behind one interface with two drivers: cgroup v2
// (the child is born in its cgroup with CLONE_INTO_CGROUP) and cgroup v1 (memory, pids
// and cpu hierarchies; the parent moves the child in before it runs anything).
// Parent side only.
#ifndef ZYGO_CORE_CGROUP_H_
#define ZYGO_CORE_CGROUP_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace zygo::core {

struct CgroupLimits {
  int64_t memory_bytes = 0;  // memory.max / memory.limit_in_bytes
  int64_t pids_max = 0;      // pids.max
  double cpus = 0;           // cpu.max / cfs_quota_us over a 100 ms period
};

// What the kernel counted for one sandbox, read from the cgroup's own files.
struct CgroupUsage {
  int64_t oom_kills = 0;          // memory.events oom_kill / memory.oom_control oom_kill
  int64_t pids_max_hits = 0;      // pids.events max
  int64_t memory_peak_bytes = 0;  // memory.peak / memory.max_usage_in_bytes (0 if unknown)
  int64_t cpu_user_us = 0;        // cpu.stat user_usec / cpuacct.usage_user (0 if unknown)
  int64_t cpu_system_us = 0;
};

enum class CgroupVersion { kV1, kV2 };

// Where a driver makes the sandboxes' cgroups. On cgroup v2 a cgroup with processes of its
// own cannot hand memory, pids or cpu to child cgroups (the no-internal-process rule; only
// the root cgroup is exempt), and zygo always lives in its own cgroup, so the driver first
// finds (or makes) a parent that holds no process.
enum class CgroupPlacementKind {
  kOwnCgroups,         // v1: below zygo's own cgroup in each hierarchy
  kRootCgroup,         // v2: zygo is in the root cgroup, which is exempt; below it
  kLeafOfOwnCgroup,    // v2: zygo was alone in a cgroup it may write: it moves into a leaf
                       // there, and sandboxes are the leaf's siblings
  kSystemdScope,       // v2: zygo shared its cgroup; systemd gives it a transient scope with
                       // Delegate=yes (over D-Bus), then the leaf step inside it
  kDelegatedAncestor,  // v2, no systemd: the nearest ancestor zygo may write that holds no
                       // process (a delegated subtree's top, or the top of the tree it sees)
  kContainerRoot,      // v2: zygo shares a container's root cgroup (its cgroup namespace's
                       // root): it moves the container's processes into /init, as
                       // docker-in-docker's entry point does, and sandboxes go below the root
};

const char* CgroupPlacementName(CgroupPlacementKind kind);

struct CgroupPlacement {
  CgroupPlacementKind kind = CgroupPlacementKind::kOwnCgroups;
  // Where sandbox cgroups are made (v1: the memory hierarchy's). For kSystemdScope, empty
  // until Prepare() has the scope.
  std::string parent_dir;
  // One line for doctor, --dry-run and the logs: where, and why there.
  std::string detail;
};

// One sandbox's cgroup (one directory per controller on v1). Destroy() removes it;
// the destructor calls Destroy() for the paths that return early.
class Cgroup {
 public:
  virtual ~Cgroup() = default;

  // v2: an O_DIRECTORY fd for clone3's CLONE_INTO_CGROUP. v1: -1.
  virtual int clone_into_fd() const = 0;

  // v1: writes `pid` into every controller's cgroup.procs. v2: nothing to do, since
  // the child was born inside. Call before the child runs untrusted code.
  virtual absl::Status AttachFromParent(pid_t pid) = 0;

  // v1: the `tasks` file of each hierarchy's directory, open for writing, for a
  // single-threaded child to write "0" into. The kernel then moves the writing thread
  // itself, which skips the global lock that writing another process's pid takes (and the
  // RCU grace period, 6-14 ms measured, the first such move after an idle spell waits for).
  // The fds let their holder move any process it can name into this cgroup: hand them only
  // to code as trusted as what will run inside. They stay open and owned by this cgroup
  // (a reused cgroup is joined again and again), valid until Destroy(); send copies.
  // v2: Unimplemented (moving oneself takes the same lock there; children are born inside
  // with CLONE_INTO_CGROUP instead).
  virtual absl::StatusOr<std::vector<int>> SelfJoinFiles() = 0;

  virtual absl::StatusOr<CgroupUsage> ReadUsage() const = 0;
  // Just ReadUsage's memory_peak_bytes: one file, for a request's hot path.
  virtual absl::StatusOr<int64_t> ReadMemoryPeak() const = 0;
  // Just ReadUsage's pids_max_hits (pids.events max, held open): one file, for a request's
  // hot path, whose outcome says pids_limit when a fork was refused.
  virtual absl::StatusOr<int64_t> ReadPidsMaxHits() const = 0;
  // Just ReadUsage's oom_kills and pids_max_hits (the rest 0), from files held open: whether
  // a limit was hit, asked after every request before its cgroup is used again.
  virtual absl::StatusOr<CgroupUsage> ReadLimitHits() const = 0;

  // Makes a cgroup nested inside this one with `limits`, named "<prefix><pid>-<n>" (the
  // supervisor's zygote leaf and per-request cgroups inside a function's). The child must
  // be destroyed before this one. v2: this cgroup must hold no process of its own (the
  // no-internal-process rule), so a sandbox with nested cgroups lives in a leaf sibling.
  // v1: no directory in a cpuacct hierarchy apart from cpu's; the nested cgroup's CPU time
  // is then counted only in this one's, and ReadUsage reports it as 0.
  virtual absl::StatusOr<std::unique_ptr<Cgroup>> CreateChild(const CgroupLimits& limits,
                                                              const std::string& prefix) = 0;

  // Starts the peak-memory counter afresh, for a cgroup used again (the supervisor reuses
  // an emptied request cgroup rather than paying mkdir/rmdir per request). v2 before
  // Linux 6.12 cannot reset memory.peak: NotFound/InvalidArgument, and the peak stays.
  virtual absl::Status ResetPeak() = 0;

  // SIGKILLs every process in the cgroup, repeating until none is left (a process may
  // fork while it is being killed). Only processes inside this cgroup are touched.
  virtual absl::Status KillAll() = 0;

  // Removes the directories (retrying while the last tasks leave). Idempotent.
  virtual absl::Status Destroy() = 0;

  // The directories this cgroup made, for --dry-run and the outcome.
  virtual std::vector<std::string> paths() const = 0;
};

// A cgroup a Zygo process made and left behind when it was killed (SIGKILL gives it no
// chance to clean up): a directory named "<prefix><pid>-<n>" whose process <pid> is gone,
// with the cgroups nested in it (the supervisor's zygote and request cgroups, named
// "<word>-<pid>-<n>" with the same pid).
struct StaleCgroup {
  std::string name;               // "zygo-812-3"
  pid_t owner = 0;                // 812, a pid no process has now
  std::vector<std::string> dirs;  // its directory in each hierarchy (v2: one)
  int nested = 0;                 // cgroups nested in it, over all its directories
  bool removed = false;
  std::string kept_because;  // why it was not removed (when asked to remove it)
};

struct StaleSweepOptions {
  bool remove = false;  // false: only find them
  // false: only beside where this driver makes its own cgroups, where a supervisor or zygo
  // started from the same cgroup made them. true: anywhere in the hierarchies (zygo doctor).
  bool everywhere = false;
  // How long to wait for the last processes in a stale cgroup to leave: a killed
  // supervisor's sandboxes die with it, but a moment later. Zero: not at all.
  absl::Duration wait_for_members = absl::ZeroDuration();
};

class CgroupDriver {
 public:
  virtual ~CgroupDriver() = default;
  virtual CgroupVersion version() const = 0;
  const char* name() const { return version() == CgroupVersion::kV2 ? "v2" : "v1"; }

  // Where this driver makes cgroups. Before Prepare(), what it will do.
  virtual const CgroupPlacement& placement() const = 0;

  // Puts this process where the placement needs it (a leaf, a systemd scope), once;
  // Create() calls it first, and a long-lived caller (the supervisor) calls it at start so
  // that a host where no limit can be applied is refused at once. The driver's destructor
  // undoes it (moves this process back, removes the leaf); destroy every Cgroup first.
  virtual absl::Status Prepare() = 0;

  // Makes a new cgroup where placement() says, with `limits` applied. Fails with
  // PermissionDenied when the caller may not create cgroups there (rootless, no
  // delegation).
  virtual absl::StatusOr<std::unique_ptr<Cgroup>> Create(const CgroupLimits& limits) = 0;

  // Finds stale cgroups (sorted by name) and, with options.remove, removes each one that
  // holds nothing but cgroups named as above and no process. Never this process's own, a
  // live process's, or any directory named otherwise; a pid reused by a new process keeps
  // its old cgroups until that process ends. From a child pid namespace, where a zygo
  // outside it looks dead, none is removed: each is reported with kept_because saying so.
  // Parent side; removing needs the access making them did (root, or the delegated
  // subtree).
  virtual std::vector<StaleCgroup> SweepStale(const StaleSweepOptions& options) = 0;
};

struct CgroupProbeOptions {
  std::string mount_root = "/sys/fs/cgroup";
  std::string self_cgroup_file = "/proc/self/cgroup";
  // New directories are named "<prefix><pid>-<n>".
  std::string name_prefix = "zygo-";
  // Where systemd says it runs the host (a directory that exists only under systemd); ""
  // never asks systemd (unit tests).
  std::string systemd_marker = "/run/systemd/system";
  // The transient scope's Description= ("zygo run", "zygo serve").
  std::string purpose = "zygo";
};

// How the cgroup hierarchies at a mount root are laid out.
enum class CgroupHierarchy {
  kNone,     // neither a cgroup2 mount nor v1 controller hierarchies
  kV1,       // v1 controller hierarchies only
  kHybrid,   // v1 controllers, plus a cgroup2 mount at <root>/unified that holds none
  kUnified,  // the root itself is the cgroup2 mount
};

// What a driver is chosen from, read once per process for the host
// (core/host_features.h) and afresh for a unit test's fake tree. Where this process's
// cgroup is stays a live read of the placement: the driver itself moves the process.
struct CgroupFacts {
  CgroupHierarchy hierarchy = CgroupHierarchy::kNone;
  bool systemd = false;  // systemd runs the host (options.systemd_marker is a directory)
};

// Picks the driver this host supports: v2 where /sys/fs/cgroup is a cgroup2 mount
// with memory, pids and cpu available; v1 where those three are v1 hierarchies. On v2 it
// also decides the placement, reading only: FailedPrecondition, naming what is missing and
// the fix, when no placement can work. Nothing moves until Prepare() or Create(). Where
// `options` looks at the host's own paths (the defaults) the facts are the host's, probed
// once (ProbeHostFeatures().cgroup); a fake tree's are read afresh.
absl::StatusOr<std::unique_ptr<CgroupDriver>> ProbeCgroupDriver(
    const CgroupProbeOptions& options = {});

// What a user can do where no cgroup can be made: a delegated cgroup (the systemd-run
// line for this user, or a Delegate=yes service) or --allow-unlimited.
std::string CgroupFixes();

// "cannot apply the memory/pids/cpu limits: <why>", with the fixes when `why` names none.
// FailedPrecondition.
absl::Status CannotApplyLimits(const absl::Status& why);

// CgroupDriver::SweepStale with options.everywhere (whatever `options` says), over the
// cgroup hierarchies mounted at `mount_root`: the cgroup2 mount there, or the v1 memory,
// pids, cpu and cpuacct hierarchies below it. Needs only the mounts, not a driver: whether
// this process could make cgroups of its own (on v2, whether its cgroup has delegated
// controllers) does not matter to what killed zygos left. FailedPrecondition when
// `mount_root` holds neither. Parent side; removing needs the access making them did.
absl::StatusOr<std::vector<StaleCgroup>> SweepStaleCgroupsEverywhere(
    const StaleSweepOptions& options, const std::string& mount_root = "/sys/fs/cgroup",
    const std::string& name_prefix = "zygo-");

}  // namespace zygo::core

#endif  // ZYGO_CORE_CGROUP_H_
