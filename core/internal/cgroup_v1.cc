// The cgroup v1 driver: one directory per hierarchy below the caller's own cgroups,
// limits in each controller's files, usage from each controller's own counters.
#include "core/internal/cgroup_v1.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "core/base/sys/fs.h"
#include "core/base/unique_fd.h"
#include "core/internal/cgroup_fs.h"
#include "core/internal/cgroup_sweep.h"

namespace zygo::core::internal {
namespace {

using ::zygo::base::sys::ReadFile;

// ---- the cgroup

class CgroupV1 : public Cgroup {
 public:
  CgroupV1() = default;
  CgroupV1(const CgroupV1&) = delete;
  CgroupV1& operator=(const CgroupV1&) = delete;
  ~CgroupV1() override { Destroy().IgnoreError(); }

  int clone_into_fd() const override { return -1; }
  absl::Status AttachFromParent(pid_t pid) override;
  absl::StatusOr<std::vector<int>> SelfJoinFiles() override;
  absl::StatusOr<CgroupUsage> ReadUsage() const override;
  absl::StatusOr<int64_t> ReadMemoryPeak() const override { return memory_peak_.Read(0); }
  absl::StatusOr<int64_t> ReadPidsMaxHits() const override {
    return pids_events_.ReadKeyed("max", 0);
  }
  absl::StatusOr<CgroupUsage> ReadLimitHits() const override;
  absl::StatusOr<std::unique_ptr<Cgroup>> CreateChild(const CgroupLimits& limits,
                                                      const std::string& prefix) override;
  absl::Status KillAll() override;
  // Any write to memory.max_usage_in_bytes resets it to the current usage.
  absl::Status ResetPeak() override { return memory_peak_.Reset(); }
  absl::Status Destroy() override;
  std::vector<std::string> paths() const override { return made_; }

  // Create's steps, in order.
  absl::Status MakeDirs(const V1Layout& layout, const std::string& name);
  absl::Status WriteMemoryLimit(int64_t bytes);
  absl::Status WritePidsLimit(int64_t pids_max);
  absl::Status WriteCpuQuota(double cpus);

 private:
  // The directory for `hierarchy`, made on first use; co-mounted controllers share one.
  absl::StatusOr<std::string> DirFor(const V1Hierarchy& hierarchy, const std::string& name);

  std::string memory_dir_;
  // Held open: read after every request (a reused cgroup must not have hit its limits).
  OpenCounter memory_peak_;  // memory_dir_'s memory.max_usage_in_bytes
  OpenCounter oom_control_;  // memory_dir_'s memory.oom_control
  std::string pids_dir_;
  OpenCounter pids_events_;   // pids_dir_'s pids.events
  OpenCounter pids_current_;  // pids_dir_'s pids.current
  std::string cpu_dir_;
  std::string cpuacct_dir_;  // Empty without a cpuacct hierarchy.
  std::vector<std::pair<int, std::string>> dir_by_hierarchy_;
  std::vector<std::string> made_;            // Every directory made, in order.
  std::vector<base::UniqueFd> procs_files_;  // made_'s cgroup.procs, open for writing
  std::vector<base::UniqueFd> join_files_;   // made_'s tasks, open for writing (SelfJoinFiles)
  std::vector<std::string> remaining_;       // Those Destroy() has not removed yet.
  bool destroy_called_ = false;
};

absl::StatusOr<std::string> CgroupV1::DirFor(const V1Hierarchy& hierarchy,
                                             const std::string& name) {
  for (const auto& [id, dir] : dir_by_hierarchy_) {
    if (id == hierarchy.id) return dir;
  }
  std::string dir = absl::StrCat(hierarchy.parent_dir, "/", name);
  ZYGO_RETURN_IF_ERROR(MakeCgroupDir(dir));
  dir_by_hierarchy_.emplace_back(hierarchy.id, dir);
  made_.push_back(dir);
  remaining_.push_back(dir);
  return dir;
}

absl::Status CgroupV1::MakeDirs(const V1Layout& layout, const std::string& name) {
  ZYGO_ASSIGN_OR_RETURN(memory_dir_, DirFor(layout.memory, name));
  ZYGO_RETURN_IF_ERROR(memory_peak_.Open(absl::StrCat(memory_dir_, "/memory.max_usage_in_bytes"),
                                         OpenCounter::Access::kReadWrite));
  ZYGO_RETURN_IF_ERROR(oom_control_.Open(absl::StrCat(memory_dir_, "/memory.oom_control")));
  ZYGO_ASSIGN_OR_RETURN(pids_dir_, DirFor(layout.pids, name));
  ZYGO_RETURN_IF_ERROR(pids_events_.Open(absl::StrCat(pids_dir_, "/pids.events")));
  ZYGO_RETURN_IF_ERROR(pids_current_.Open(absl::StrCat(pids_dir_, "/pids.current")));
  ZYGO_ASSIGN_OR_RETURN(cpu_dir_, DirFor(layout.cpu, name));
  // CPU time is counted by cpuacct, which is often co-mounted with cpu ("cpu,cpuacct")
  // but is a hierarchy of its own on some hosts; without it the sandbox's CPU time
  // would be invisible.
  if (layout.cpuacct.has_value()) {
    ZYGO_ASSIGN_OR_RETURN(cpuacct_dir_, DirFor(*layout.cpuacct, name));
  }
  return absl::OkStatus();
}

absl::Status CgroupV1::WriteMemoryLimit(int64_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  const std::string value = absl::StrCat(bytes);
  // The kernel OOM killer stays on (memory.oom_control's oom_kill_disable is left at 0):
  // with it off, a task over the limit would hang instead of being killed and counted.
  ZYGO_RETURN_IF_ERROR(WriteControlFile(absl::StrCat(memory_dir_, "/memory.limit_in_bytes"), value,
                                        IfMissing::kCreate));
  // memory+swap gets the same limit, so swap cannot extend it. It must be written after
  // limit_in_bytes (the kernel keeps memsw >= mem). The file is absent when swap
  // accounting is off (swapaccount=0 or no CONFIG_MEMCG_SWAP); then there is nothing to
  // limit.
  return WriteOptionalControlFile(absl::StrCat(memory_dir_, "/memory.memsw.limit_in_bytes"), value);
}

absl::Status CgroupV1::WritePidsLimit(int64_t pids_max) {
  if (pids_max == 0) return absl::OkStatus();
  return WriteControlFile(absl::StrCat(pids_dir_, "/pids.max"), absl::StrCat(pids_max),
                          IfMissing::kCreate);
}

absl::Status CgroupV1::WriteCpuQuota(double cpus) {
  if (cpus == 0) return absl::OkStatus();
  ZYGO_RETURN_IF_ERROR(WriteControlFile(absl::StrCat(cpu_dir_, "/cpu.cfs_period_us"),
                                        absl::StrCat(kCpuPeriodUs), IfMissing::kCreate));
  return WriteControlFile(absl::StrCat(cpu_dir_, "/cpu.cfs_quota_us"),
                          absl::StrCat(CpuQuotaUs(cpus)), IfMissing::kCreate);
}

absl::Status CgroupV1::AttachFromParent(pid_t pid) {
  if (destroy_called_) {
    return absl::FailedPreconditionError(
        absl::StrCat("attach pid ", pid, ": the cgroup was already destroyed"));
  }
  // Opened once and kept: a reused cgroup (the supervisor's request cgroups) is attached to
  // again and again, and the opens were a visible share of a request's cost.
  if (procs_files_.empty()) {
    for (const std::string& dir : made_) {
      const std::string path = absl::StrCat(dir, "/cgroup.procs");
      // O_CREAT is a no-op on cgroupfs; it lets a fake tree of plain files stand in.
      base::UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
      if (!fd.valid()) return base::ErrnoStatus(errno, absl::StrCat("open(", path, ")"));
      procs_files_.push_back(std::move(fd));
    }
  }
  const std::string value = absl::StrCat(pid);
  for (size_t i = 0; i < procs_files_.size(); ++i) {
    ssize_t n = base::RetryOnEintr(
        [&] { return ::write(procs_files_[i].get(), value.data(), value.size()); });
    if (n != static_cast<ssize_t>(value.size())) {
      return base::ErrnoStatus(errno,
                               absl::StrCat("write(", made_[i], "/cgroup.procs, ", pid, ")"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int>> CgroupV1::SelfJoinFiles() {
  if (destroy_called_) {
    return absl::FailedPreconditionError("join files: the cgroup was already destroyed");
  }
  if (join_files_.empty()) {
    for (const std::string& dir : made_) {
      // `tasks`, not cgroup.procs: "0" there names the writing thread alone, which is what
      // lets the kernel skip the lock that stabilises a whole thread group. O_CREAT is a
      // no-op on cgroupfs; it lets a fake tree of plain files stand in.
      const std::string path = absl::StrCat(dir, "/tasks");
      base::UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
      if (!fd.valid()) {
        join_files_.clear();
        return base::ErrnoStatus(errno, absl::StrCat("open(", path, ")"));
      }
      join_files_.push_back(std::move(fd));
    }
  }
  std::vector<int> fds;
  for (const base::UniqueFd& fd : join_files_) fds.push_back(fd.get());
  return fds;
}

absl::StatusOr<std::unique_ptr<Cgroup>> CgroupV1::CreateChild(const CgroupLimits& limits,
                                                              const std::string& prefix) {
  ZYGO_RETURN_IF_ERROR(CheckLimits(limits));
  ZYGO_ASSIGN_OR_RETURN(const std::string name, NewCgroupName(prefix));
  // The same hierarchies, one level down: each of our directories is the new parent.
  V1Layout below;
  auto hierarchy_of = [&](const std::string& dir) {
    for (const auto& [id, made] : dir_by_hierarchy_) {
      if (made == dir) return V1Hierarchy{id, dir};
    }
    return V1Hierarchy{0, dir};
  };
  below.memory = hierarchy_of(memory_dir_);
  below.pids = hierarchy_of(pids_dir_);
  below.cpu = hierarchy_of(cpu_dir_);
  // cpuacct only where it shares cpu's directory (co-mounted, "cpu,cpuacct"). A hierarchy
  // of its own would be one more move for every process joining (a spare per request), and
  // nothing reads a nested cgroup's CPU time: its processes count in this cgroup's.
  if (!cpuacct_dir_.empty() && cpuacct_dir_ == cpu_dir_) below.cpuacct = below.cpu;
  auto child = std::make_unique<CgroupV1>();
  ZYGO_RETURN_IF_ERROR(child->MakeDirs(below, name));
  ZYGO_RETURN_IF_ERROR(child->WriteMemoryLimit(limits.memory_bytes));
  ZYGO_RETURN_IF_ERROR(child->WritePidsLimit(limits.pids_max));
  ZYGO_RETURN_IF_ERROR(child->WriteCpuQuota(limits.cpus));
  return std::unique_ptr<Cgroup>(std::move(child));
}

// Every member is in the pids hierarchy's directory, so one count and one list name them all.
absl::Status CgroupV1::KillAll() {
  return KillCgroupMembers(pids_current_, absl::StrCat(pids_dir_, "/cgroup.procs"));
}

absl::StatusOr<CgroupUsage> CgroupV1::ReadLimitHits() const {
  return ReadLimitHitsFrom(oom_control_, pids_events_);
}

absl::StatusOr<CgroupUsage> CgroupV1::ReadUsage() const {
  ZYGO_ASSIGN_OR_RETURN(CgroupUsage usage, ReadLimitHits());

  ZYGO_ASSIGN_OR_RETURN(usage.memory_peak_bytes, memory_peak_.Read(0));

  if (!cpuacct_dir_.empty()) {
    // Nanoseconds; usage_user/usage_sys appeared in Linux 4.7.
    ZYGO_ASSIGN_OR_RETURN(int64_t user_ns,
                          ReadInt64Or(absl::StrCat(cpuacct_dir_, "/cpuacct.usage_user"), 0));
    ZYGO_ASSIGN_OR_RETURN(int64_t sys_ns,
                          ReadInt64Or(absl::StrCat(cpuacct_dir_, "/cpuacct.usage_sys"), 0));
    usage.cpu_user_us = user_ns / 1000;
    usage.cpu_system_us = sys_ns / 1000;
  }
  return usage;
}

absl::Status CgroupV1::Destroy() {
  destroy_called_ = true;
  procs_files_.clear();
  join_files_.clear();
  for (OpenCounter* held : {&memory_peak_, &oom_control_, &pids_events_, &pids_current_}) {
    held->Close();
  }
  absl::Status first_error;
  std::vector<std::string> still_there;
  for (const std::string& dir : remaining_) {
    absl::Status removed = RemoveCgroupDir(dir, "tasks");
    if (removed.ok()) continue;
    if (first_error.ok()) first_error = removed;
    still_there.push_back(dir);
  }
  remaining_ = std::move(still_there);
  return first_error;
}

// ---- layout

bool IsV1HierarchyRoot(const std::string& dir) {
  // cgroup.controllers exists only in cgroup2; cgroup.procs in both.
  return IsDirectory(dir) && PathExists(absl::StrCat(dir, "/cgroup.procs")) &&
         !PathExists(absl::StrCat(dir, "/cgroup.controllers"));
}

absl::StatusOr<V1Hierarchy> FindHierarchy(const CgroupProbeOptions& options,
                                          const std::vector<V1Membership>& memberships,
                                          const std::string& controller) {
  const V1Membership* member = nullptr;
  for (const V1Membership& m : memberships) {
    for (const std::string& c : m.controllers) {
      if (c == controller) member = &m;
    }
  }
  if (member == nullptr) {
    return absl::NotFoundError(
        absl::StrCat(controller, ": not a v1 controller in ", options.self_cgroup_file));
  }
  // Usually mounted at <root>/<controller> (for co-mounted ones, a symlink such as
  // cpu -> cpu,cpuacct), else at <root>/<all of its controllers>.
  std::string mount;
  for (const std::string& candidate :
       {absl::StrCat(options.mount_root, "/", controller),
        absl::StrCat(options.mount_root, "/", absl::StrJoin(member->controllers, ","))}) {
    if (IsV1HierarchyRoot(candidate)) {
      mount = candidate;
      break;
    }
  }
  if (mount.empty()) {
    return absl::NotFoundError(absl::StrCat(controller, ": ", options.mount_root, "/", controller,
                                            " is not a v1 hierarchy"));
  }
  // A path outside our cgroup namespace shows as "/.."; we could not find it.
  if (member->path.empty() || member->path[0] != '/' || HasDotDot(member->path)) {
    return absl::NotFoundError(absl::StrCat(controller, ": own cgroup \"", member->path,
                                            "\" is not below the hierarchy's root"));
  }
  const std::string parent = CgroupDir(mount, member->path);
  if (!IsDirectory(parent)) {
    return absl::NotFoundError(
        absl::StrCat(controller, ": own cgroup directory ", parent, " does not exist"));
  }
  return V1Hierarchy{member->hierarchy_id, parent, mount};
}

}  // namespace

absl::StatusOr<std::vector<V1Membership>> ParseV1SelfCgroup(absl::string_view content) {
  std::vector<V1Membership> memberships;
  for (absl::string_view line : absl::StrSplit(content, '\n', absl::SkipEmpty())) {
    std::vector<absl::string_view> fields = absl::StrSplit(line, absl::MaxSplits(':', 2));
    int id = 0;
    if (fields.size() != 3 || !absl::SimpleAtoi(fields[0], &id)) {
      return absl::InvalidArgumentError(
          absl::StrCat("malformed /proc/self/cgroup line \"", line, "\""));
    }
    V1Membership member{id, {}, std::string(fields[2])};
    for (absl::string_view c : absl::StrSplit(fields[1], ',', absl::SkipEmpty())) {
      // "name=systemd" names a hierarchy without controllers.
      if (!absl::StartsWith(c, "name=")) member.controllers.emplace_back(c);
    }
    // The v2 line ("0::/path") has no controllers either.
    if (!member.controllers.empty()) memberships.push_back(std::move(member));
  }
  return memberships;
}

std::vector<std::string> V1ControllerMounts(const std::string& mount_root) {
  std::vector<std::string> mounts;
  for (const std::string& name : Subdirectories(mount_root)) {
    bool used = false;
    for (absl::string_view controller : absl::StrSplit(name, ',')) {
      for (const char* wanted : {"memory", "pids", "cpu", "cpuacct"}) used |= controller == wanted;
    }
    const std::string dir = absl::StrCat(mount_root, "/", name);
    if (used && IsV1HierarchyRoot(dir)) mounts.push_back(dir);
  }
  std::sort(mounts.begin(), mounts.end());
  return mounts;
}

absl::StatusOr<V1Layout> ResolveV1Layout(const CgroupProbeOptions& options) {
  ZYGO_ASSIGN_OR_RETURN(std::string self, ReadFile(options.self_cgroup_file));
  ZYGO_ASSIGN_OR_RETURN(std::vector<V1Membership> memberships, ParseV1SelfCgroup(self));
  V1Layout layout;
  std::vector<std::string> missing;
  for (auto [controller, slot] : {std::pair{"memory", &layout.memory},
                                  std::pair{"pids", &layout.pids}, std::pair{"cpu", &layout.cpu}}) {
    absl::StatusOr<V1Hierarchy> hierarchy = FindHierarchy(options, memberships, controller);
    if (hierarchy.ok()) {
      *slot = *std::move(hierarchy);
    } else {
      missing.emplace_back(hierarchy.status().message());
    }
  }
  if (!missing.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cgroup v1 needs memory, pids and cpu hierarchies; missing: ",
                     absl::StrJoin(missing, "; ")));
  }
  absl::StatusOr<V1Hierarchy> cpuacct = FindHierarchy(options, memberships, "cpuacct");
  if (cpuacct.ok()) layout.cpuacct = *std::move(cpuacct);
  return layout;
}

CgroupV1Driver::CgroupV1Driver(V1Layout layout, std::string name_prefix)
    : layout_(std::move(layout)),
      name_prefix_(std::move(name_prefix)),
      placement_{CgroupPlacementKind::kOwnCgroups, layout_.memory.parent_dir,
                 absl::StrCat("below zygo's own cgroups in the v1 memory, pids and cpu "
                              "hierarchies (",
                              layout_.memory.parent_dir, ", ...)")} {}

std::vector<StaleCgroup> CgroupV1Driver::SweepStale(const StaleSweepOptions& options) {
  std::vector<SweepHierarchy> hierarchies;
  for (const V1Hierarchy* hierarchy : {&layout_.memory, &layout_.pids, &layout_.cpu}) {
    hierarchies.push_back({hierarchy->parent_dir, hierarchy->mount_dir});
  }
  if (layout_.cpuacct.has_value()) {
    hierarchies.push_back({layout_.cpuacct->parent_dir, layout_.cpuacct->mount_dir});
  }
  return SweepStaleCgroups(CgroupVersion::kV1, hierarchies, name_prefix_, options);
}

absl::StatusOr<std::unique_ptr<Cgroup>> CgroupV1Driver::Create(const CgroupLimits& limits) {
  ZYGO_RETURN_IF_ERROR(CheckLimits(limits));
  ZYGO_ASSIGN_OR_RETURN(const std::string name, NewCgroupName(name_prefix_));
  auto cgroup = std::make_unique<CgroupV1>();
  // On failure, `cgroup`'s destructor removes whatever directories were made.
  SweepStale({.remove = true});
  ZYGO_RETURN_IF_ERROR(cgroup->MakeDirs(layout_, name));
  ZYGO_RETURN_IF_ERROR(cgroup->WriteMemoryLimit(limits.memory_bytes));
  ZYGO_RETURN_IF_ERROR(cgroup->WritePidsLimit(limits.pids_max));
  ZYGO_RETURN_IF_ERROR(cgroup->WriteCpuQuota(limits.cpus));
  return std::unique_ptr<Cgroup>(std::move(cgroup));
}

}  // namespace zygo::core::internal
