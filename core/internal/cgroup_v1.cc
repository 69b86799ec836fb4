// The cgroup v1 driver: one directory per hierarchy below the caller's own cgroups,
// limits in each controller's files, usage from each controller's own counters.
#include "core/internal/cgroup_v1.h"

#include "core/internal/cgroup_sweep.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <thread>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "core/base/unique_fd.h"

namespace zygo::core::internal {
namespace {

using ::zygo::base::ErrnoStatus;
using ::zygo::base::UniqueFd;

constexpr int64_t kCfsPeriodUs = 100000;
// The kernel rejects cfs_quota_us below 1 ms (kernel/sched/core.c, min_cfs_quota_period).
constexpr int64_t kMinCfsQuotaUs = 1000;
constexpr auto kRmdirRetryFor = std::chrono::seconds(1);
constexpr auto kRmdirRetrySleep = std::chrono::milliseconds(10);

// Process-wide, so that two drivers with the same prefix never pick the same name.
std::atomic<uint64_t> next_cgroup_number{0};

// ---- cgroupfs file helpers. The v2 driver keeps its own copy: facility files do not
// ---- call one another (STYLE.md A.3).

bool PathExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

bool IsDirectory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

absl::StatusOr<std::string> ReadSmallFile(const std::string& path) {
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("open(", path, ", O_RDONLY)"));
  UniqueFd owned(fd);
  std::string content;
  char buffer[4096];
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoStatus(errno, absl::StrCat("read(", path, ")"));
    if (n == 0) return content;
    content.append(buffer, static_cast<size_t>(n));
  }
}

enum class IfMissing { kCreate, kFail };

// A control file exists as soon as its cgroup directory does, so O_CREAT is a no-op on
// cgroupfs; it lets the same code write into a plain directory (the fake trees of unit
// tests). Optional files use kFail, so that their absence shows as NotFound.
absl::Status WriteControlFile(const std::string& path, absl::string_view value,
                              IfMissing if_missing) {
  const int flags =
      O_WRONLY | O_CLOEXEC | O_TRUNC | (if_missing == IfMissing::kCreate ? O_CREAT : 0);
  int fd;
  do {
    fd = ::open(path.c_str(), flags, 0644);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    const int err = errno;
    // cgroupfs cannot create files: O_CREAT of a missing one fails with EACCES, which
    // would wrongly read as a permission problem.
    if (err != ENOENT && !PathExists(path)) {
      return absl::NotFoundError(absl::StrCat("open(", path, ", O_WRONLY|O_CREAT): ",
                                              strerror(err), "; the file does not exist"));
    }
    return ErrnoStatus(err, absl::StrCat("open(", path, ", O_WRONLY)"));
  }
  UniqueFd owned(fd);
  // One write(2): cgroupfs parses each write as one whole value.
  ssize_t n;
  do {
    n = ::write(fd, value.data(), value.size());
  } while (n < 0 && errno == EINTR);
  if (n < 0) return ErrnoStatus(errno, absl::StrCat("write(", path, ", \"", value, "\")"));
  if (static_cast<size_t>(n) != value.size()) {
    return absl::InternalError(absl::StrCat("write(", path, ", \"", value, "\"): wrote ", n,
                                            " of ", value.size(), " bytes"));
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> ParseInt64(absl::string_view text, const std::string& path) {
  int64_t value = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &value)) {
    return absl::InternalError(absl::StrCat("cannot parse \"", text, "\" in ", path));
  }
  return value;
}

// The value of the line "key N" of a flat-keyed file (memory.oom_control, pids.events),
// or `if_absent` when no line has that key.
absl::StatusOr<int64_t> KeyedValueOr(absl::string_view content, absl::string_view key,
                                     const std::string& path, int64_t if_absent) {
  for (absl::string_view line : absl::StrSplit(content, '\n', absl::SkipEmpty())) {
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(line, ' ');
    if (kv.first == key) return ParseInt64(kv.second, path);
  }
  return if_absent;
}

// A single-number file, or `if_absent` when the kernel does not provide it.
absl::StatusOr<int64_t> ReadInt64Or(const std::string& path, int64_t if_absent) {
  absl::StatusOr<std::string> content = ReadSmallFile(path);
  if (absl::IsNotFound(content.status())) return if_absent;
  if (!content.ok()) return content.status();
  return ParseInt64(*content, path);
}

absl::Status MakeCgroupDir(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) == 0) return absl::OkStatus();
  const int err = errno;
  if (err == EACCES || err == EPERM || err == EROFS) {
    return absl::PermissionDeniedError(absl::StrCat("mkdir(", path, "): ", strerror(err),
                                                    "; no cgroup can be created there"));
  }
  return ErrnoStatus(err, absl::StrCat("mkdir(", path, ")"));
}

// Retries EBUSY: a v1 cgroup cannot be removed while its tasks list is non-empty, and a
// child that was just reaped can linger there briefly while the kernel finishes exit.
absl::Status RemoveCgroupDir(const std::string& path) {
  const auto deadline = std::chrono::steady_clock::now() + kRmdirRetryFor;
  for (;;) {
    if (::rmdir(path.c_str()) == 0) return absl::OkStatus();
    const int err = errno;
    if (err == ENOENT) return absl::OkStatus();
    if (err == EINTR) continue;
    if (err == EBUSY && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(kRmdirRetrySleep);
      continue;
    }
    if (err == ENOTEMPTY) {
      // rmdir of a real cgroup ignores its control files; only a plain directory
      // (a fake tree in tests) reports ENOTEMPTY, and then we must not delete files.
      return absl::FailedPreconditionError(absl::StrCat(
          "rmdir(", path, "): directory not empty; not a cgroupfs directory"));
    }
    return ErrnoStatus(err, absl::StrCat("rmdir(", path, ")",
                                         err == EBUSY ? " (tasks remain after 1 s)" : ""));
  }
}

// ---- limits

int64_t CpuQuotaUs(double cpus) { return std::llround(cpus * kCfsPeriodUs); }

absl::Status CheckLimits(const CgroupLimits& limits) {
  if (limits.memory_bytes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("memory_bytes must be >= 0, got ", limits.memory_bytes));
  }
  if (limits.pids_max < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("pids_max must be >= 0, got ", limits.pids_max));
  }
  // Written so that NaN fails too.
  if (!(limits.cpus >= 0 && limits.cpus <= 1e6)) {
    return absl::InvalidArgumentError(
        absl::StrCat("cpus must be in [0, 1e6], got ", limits.cpus));
  }
  if (limits.cpus > 0 && CpuQuotaUs(limits.cpus) < kMinCfsQuotaUs) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cpus=", limits.cpus, " gives a CFS quota of ", CpuQuotaUs(limits.cpus),
        " us per 100 ms; the kernel's minimum is 1000 us (cpus >= 0.01)"));
  }
  return absl::OkStatus();
}

// ---- the cgroup

class CgroupV1 : public Cgroup {
 public:
  CgroupV1() = default;
  CgroupV1(const CgroupV1&) = delete;
  CgroupV1& operator=(const CgroupV1&) = delete;
  ~CgroupV1() override { Destroy().IgnoreError(); }

  int clone_into_fd() const override { return -1; }
  absl::Status AttachFromParent(pid_t pid) override;
  absl::StatusOr<CgroupUsage> ReadUsage() const override;
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
  std::string pids_dir_;
  std::string cpu_dir_;
  std::string cpuacct_dir_;  // Empty without a cpuacct hierarchy.
  std::vector<std::pair<int, std::string>> dir_by_hierarchy_;
  std::vector<std::string> made_;       // Every directory made, in order.
  std::vector<std::string> remaining_;  // Those Destroy() has not removed yet.
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
  ZYGO_ASSIGN_OR_RETURN(pids_dir_, DirFor(layout.pids, name));
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
  ZYGO_RETURN_IF_ERROR(WriteControlFile(absl::StrCat(memory_dir_, "/memory.limit_in_bytes"),
                                        value, IfMissing::kCreate));
  // memory+swap gets the same limit, so swap cannot extend it. It must be written after
  // limit_in_bytes (the kernel keeps memsw >= mem). The file is absent when swap
  // accounting is off (swapaccount=0 or no CONFIG_MEMCG_SWAP); then there is nothing to
  // limit.
  absl::Status memsw =
      WriteControlFile(absl::StrCat(memory_dir_, "/memory.memsw.limit_in_bytes"), value,
                       IfMissing::kFail);
  if (absl::IsNotFound(memsw)) return absl::OkStatus();
  return memsw;
}

absl::Status CgroupV1::WritePidsLimit(int64_t pids_max) {
  if (pids_max == 0) return absl::OkStatus();
  return WriteControlFile(absl::StrCat(pids_dir_, "/pids.max"), absl::StrCat(pids_max),
                          IfMissing::kCreate);
}

absl::Status CgroupV1::WriteCpuQuota(double cpus) {
  if (cpus == 0) return absl::OkStatus();
  ZYGO_RETURN_IF_ERROR(WriteControlFile(absl::StrCat(cpu_dir_, "/cpu.cfs_period_us"),
                                        absl::StrCat(kCfsPeriodUs), IfMissing::kCreate));
  return WriteControlFile(absl::StrCat(cpu_dir_, "/cpu.cfs_quota_us"),
                          absl::StrCat(CpuQuotaUs(cpus)), IfMissing::kCreate);
}

absl::Status CgroupV1::AttachFromParent(pid_t pid) {
  if (destroy_called_) {
    return absl::FailedPreconditionError(
        absl::StrCat("attach pid ", pid, ": the cgroup was already destroyed"));
  }
  const std::string value = absl::StrCat(pid);
  for (const std::string& dir : made_) {
    ZYGO_RETURN_IF_ERROR(
        WriteControlFile(absl::StrCat(dir, "/cgroup.procs"), value, IfMissing::kCreate));
  }
  return absl::OkStatus();
}

absl::StatusOr<CgroupUsage> CgroupV1::ReadUsage() const {
  CgroupUsage usage;
  const std::string oom_control = absl::StrCat(memory_dir_, "/memory.oom_control");
  ZYGO_ASSIGN_OR_RETURN(std::string oom, ReadSmallFile(oom_control));
  // The oom_kill line appeared in Linux 4.13; older kernels count nothing.
  ZYGO_ASSIGN_OR_RETURN(usage.oom_kills, KeyedValueOr(oom, "oom_kill", oom_control, 0));

  const std::string pids_events = absl::StrCat(pids_dir_, "/pids.events");
  ZYGO_ASSIGN_OR_RETURN(std::string events, ReadSmallFile(pids_events));
  ZYGO_ASSIGN_OR_RETURN(usage.pids_max_hits, KeyedValueOr(events, "max", pids_events, 0));

  ZYGO_ASSIGN_OR_RETURN(
      usage.memory_peak_bytes,
      ReadInt64Or(absl::StrCat(memory_dir_, "/memory.max_usage_in_bytes"), 0));

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
  absl::Status first_error;
  std::vector<std::string> still_there;
  for (const std::string& dir : remaining_) {
    absl::Status removed = RemoveCgroupDir(dir);
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

bool HasDotDot(absl::string_view path) {
  for (absl::string_view part : absl::StrSplit(path, '/')) {
    if (part == "..") return true;
  }
  return false;
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
    return absl::NotFoundError(absl::StrCat(controller, ": not a v1 controller in ",
                                            options.self_cgroup_file));
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
    return absl::NotFoundError(absl::StrCat(controller, ": ", options.mount_root, "/",
                                            controller, " is not a v1 hierarchy"));
  }
  // A path outside our cgroup namespace shows as "/.."; we could not find it.
  if (member->path.empty() || member->path[0] != '/' || HasDotDot(member->path)) {
    return absl::NotFoundError(absl::StrCat(controller, ": own cgroup \"", member->path,
                                            "\" is not below the hierarchy's root"));
  }
  std::string parent = member->path == "/" ? mount : absl::StrCat(mount, member->path);
  while (parent.size() > 1 && parent.back() == '/') parent.pop_back();
  if (!IsDirectory(parent)) {
    return absl::NotFoundError(
        absl::StrCat(controller, ": own cgroup directory ", parent, " does not exist"));
  }
  return V1Hierarchy{member->hierarchy_id, parent};
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

absl::StatusOr<V1Layout> ResolveV1Layout(const CgroupProbeOptions& options) {
  ZYGO_ASSIGN_OR_RETURN(std::string self, ReadSmallFile(options.self_cgroup_file));
  ZYGO_ASSIGN_OR_RETURN(std::vector<V1Membership> memberships, ParseV1SelfCgroup(self));
  V1Layout layout;
  std::vector<std::string> missing;
  for (auto [controller, slot] : {std::pair{"memory", &layout.memory},
                                  std::pair{"pids", &layout.pids},
                                  std::pair{"cpu", &layout.cpu}}) {
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
    : layout_(std::move(layout)), name_prefix_(std::move(name_prefix)) {}

absl::StatusOr<std::unique_ptr<Cgroup>> CgroupV1Driver::Create(const CgroupLimits& limits) {
  ZYGO_RETURN_IF_ERROR(CheckLimits(limits));
  if (name_prefix_.find('/') != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("cgroup name prefix \"", name_prefix_, "\" contains '/'"));
  }
  const std::string name = absl::StrCat(name_prefix_, ::getpid(), "-",
                                        next_cgroup_number.fetch_add(1));
  auto cgroup = std::make_unique<CgroupV1>();
  // On failure, `cgroup`'s destructor removes whatever directories were made.
  for (const V1Hierarchy* hierarchy : {&layout_.memory, &layout_.pids, &layout_.cpu}) {
    SweepStaleCgroups(hierarchy->parent_dir, name_prefix_);
  }
  if (layout_.cpuacct.has_value()) SweepStaleCgroups(layout_.cpuacct->parent_dir, name_prefix_);
  ZYGO_RETURN_IF_ERROR(cgroup->MakeDirs(layout_, name));
  ZYGO_RETURN_IF_ERROR(cgroup->WriteMemoryLimit(limits.memory_bytes));
  ZYGO_RETURN_IF_ERROR(cgroup->WritePidsLimit(limits.pids_max));
  ZYGO_RETURN_IF_ERROR(cgroup->WriteCpuQuota(limits.cpus));
  return std::unique_ptr<Cgroup>(std::move(cgroup));
}

}  // namespace zygo::core::internal
