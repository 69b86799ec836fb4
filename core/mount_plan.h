// The mount plan: every directory, file, symlink and mount the child makes to build
// the sandbox's root, computed in the parent so the child only walks a list.
#ifndef ZYGO_CORE_MOUNT_PLAN_H_
#define ZYGO_CORE_MOUNT_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/spec.h"

namespace zygo::core {

// Where the child builds the tree. It mounts a staging tmpfs on the host's /tmp,
// pivots into it with the host root kept at kOldRoot (bind sources are read from
// there), builds the sandbox root at kNewRoot, then pivots again.
inline constexpr char kStagingDir[] = "/tmp";
inline constexpr char kOldRoot[] = "/oldroot";
inline constexpr char kNewRoot[] = "/newroot";

// /proc's masks, one list for every /proc Zygo mounts: a sandbox's (BuildMountPlan) and a
// function zygote's own (core/forked_zygote.h). Each is skipped where the kernel has no
// such file. First the OCI runtime spec's default masked paths, then every file directly
// under /proc that only root may read: a sandbox's root is the host's root when zygo runs
// as root, and these show the host's physical memory layout, kernel allocations and log,
// or (program_cpu, on some vendor kernels) every program the host ran. Named rather than
// found by listing /proc, which cost 0.15 ms of each run (a stat of every entry);
// security_tests/host_resource_escape_test lists /proc and fails on a root-only file of
// the running kernel that is not here. A masked directory gets an empty read-only tmpfs, a
// masked file a read-only bind of /dev/null.
inline constexpr const char* kMaskedProcPaths[] = {
    "/proc/acpi",          "/proc/asound",       "/proc/kcore",       "/proc/keys",
    "/proc/latency_stats", "/proc/timer_list",   "/proc/timer_stats", "/proc/sched_debug",
    "/proc/scsi",          "/proc/kmsg",         "/proc/kpagecgroup", "/proc/kpagecount",
    "/proc/kpageflags",    "/proc/pagetypeinfo", "/proc/slabinfo",    "/proc/vmallocinfo",
    "/proc/program_cpu",
};
// Bound onto themselves read-only (and noexec).
inline constexpr const char* kReadOnlyProcPaths[] = {"/proc/bus", "/proc/fs", "/proc/irq",
                                                     "/proc/sys", "/proc/sysrq-trigger"};

enum class MountOpKind {
  kMkdir,    // target
  kTouch,    // target: an empty file to bind a file onto
  kSymlink,  // target -> source
  kBind,     // source (under kOldRoot, or kNewRoot for masks) onto target
  // A path the caller chose (a volume, a dir: image), bound from a descriptor the child
  // opens without following any symlink and checks is still the file the parent saw, so
  // nothing swapped in between (another sandbox holding its parent directory) is mounted.
  kBindChecked,
  kTmpfs,      // a tmpfs with `data` options on target
  kProc,       // a fresh proc on target
  kReadOnly,   // make the mount at target read-only (recursively when `recursive`)
  kWriteFile,  // a new file at target (in the staging tmpfs) holding `data`, mode 0444
};

struct MountOp {
  MountOpKind kind;
  std::string source;               // as the child sees it during the build
  std::string target;               // as the child sees it during the build (under kNewRoot)
  std::string sandbox_path;         // the same target as the sandboxed program sees it
  std::string data;                 // tmpfs options
  unsigned long flags = 0;          // MS_* flags for kTmpfs and kProc
  unsigned long long attr_set = 0;  // MOUNT_ATTR_* set after a kBind or by kReadOnly
  bool recursive = true;            // kBind/kReadOnly: include submounts
  // kBindChecked: the source as the parent found it (stat after realpath).
  uint64_t source_dev = 0;
  uint64_t source_ino = 0;
  bool source_is_dir = false;
  bool read_only() const;
};

struct MountPlan {
  // The first op makes the root at kNewRoot: a tmpfs holding binds (the host image)
  // or a read-only bind of a directory (dir:PATH).
  std::vector<MountOp> ops;
  // Directories the sandboxed program may write to (for Landlock).
  std::vector<std::string> writable_paths;
};

// Builds the mount plan for `spec`: the image's root, /proc with the OCI masked and
// read-only paths, a minimal /dev, /tmp, and the volumes. Checks every host path it
// names, so a missing image or volume source fails here, before any clone.
absl::StatusOr<MountPlan> BuildMountPlan(const Spec& spec);

}  // namespace zygo::core

#endif  // ZYGO_CORE_MOUNT_PLAN_H_
