// The cgroup v2 driver: make one directory where the placement says, write the limits,
// hold an fd for CLONE_INTO_CGROUP, read usage from its event files.
#include "core/internal/cgroup_v2.h"

#include <errno.h>
#include <linux/magic.h>
#include <sys/types.h>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/base/status_macros.h"
#include "core/base/sys/fs.h"
#include "core/base/unique_fd.h"
#include "core/internal/cgroup_fs.h"
#include "core/internal/cgroup_sweep.h"
#include "core/internal/cgroup_v2_tree.h"

namespace zygo::core::internal {
namespace {

namespace sys = ::zygo::base::sys;
using ::zygo::base::UniqueFd;

std::vector<std::string> Words(absl::string_view text) {
  return absl::StrSplit(text, absl::ByAnyChar(" \t\n"), absl::SkipEmpty());
}

// ---- the cgroup

class CgroupV2 : public Cgroup {
 public:
  explicit CgroupV2(std::string dir) : dir_(std::move(dir)) {}
  CgroupV2(const CgroupV2&) = delete;
  CgroupV2& operator=(const CgroupV2&) = delete;
  ~CgroupV2() override { Destroy().IgnoreError(); }

  int clone_into_fd() const override { return dir_fd_.get(); }
  absl::Status AttachFromParent(pid_t pid) override;
  absl::StatusOr<std::vector<int>> SelfJoinFiles() override {
    return absl::UnimplementedError(
        "cgroup v2: a process moving itself takes the same lock as being moved");
  }
  absl::StatusOr<CgroupUsage> ReadUsage() const override;
  // memory.peak appeared in Linux 5.19; 0 before.
  absl::StatusOr<int64_t> ReadMemoryPeak() const override { return memory_peak_.Read(0); }
  absl::StatusOr<int64_t> ReadPidsMaxHits() const override {
    return pids_events_.ReadKeyed("max", 0);
  }
  absl::StatusOr<CgroupUsage> ReadLimitHits() const override;
  absl::StatusOr<std::unique_ptr<Cgroup>> CreateChild(const CgroupLimits& limits,
                                                      const std::string& prefix) override;
  // memory.peak is writable (a reset) since Linux 6.12.
  absl::Status ResetPeak() override { return memory_peak_.Reset(); }
  absl::Status KillAll() override;
  absl::Status Destroy() override;
  std::vector<std::string> paths() const override { return {dir_}; }

  // Create's steps after the mkdir, in order.
  absl::Status WriteMemoryLimit(int64_t bytes);
  absl::Status WritePidsLimit(int64_t pids_max);
  absl::Status WriteCpuMax(double cpus);
  // The directory fd for CLONE_INTO_CGROUP and the counters read per request, held until
  // Destroy.
  absl::Status OpenHeldFiles();

 private:
  absl::Status KillRemainingProcesses();

  std::string dir_;
  UniqueFd dir_fd_;
  OpenCounter memory_peak_;    // memory.peak
  OpenCounter memory_events_;  // memory.events
  OpenCounter pids_events_;    // pids.events
  OpenCounter pids_current_;   // pids.current
  bool removed_ = false;
  bool destroy_called_ = false;
};

absl::Status CgroupV2::WriteMemoryLimit(int64_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  ZYGO_RETURN_IF_ERROR(
      WriteControlFile(absl::StrCat(dir_, "/memory.max"), absl::StrCat(bytes), IfMissing::kCreate));
  // No swap, so that swap cannot extend the limit. The file is absent without swap
  // accounting (CONFIG_MEMCG_SWAP off, or swapaccount=0); then there is nothing to limit.
  return WriteOptionalControlFile(absl::StrCat(dir_, "/memory.swap.max"), "0");
}

absl::Status CgroupV2::WritePidsLimit(int64_t pids_max) {
  if (pids_max == 0) return absl::OkStatus();
  return WriteControlFile(absl::StrCat(dir_, "/pids.max"), absl::StrCat(pids_max),
                          IfMissing::kCreate);
}

absl::Status CgroupV2::WriteCpuMax(double cpus) {
  if (cpus == 0) return absl::OkStatus();
  return WriteControlFile(absl::StrCat(dir_, "/cpu.max"),
                          absl::StrCat(CpuQuotaUs(cpus), " ", kCpuPeriodUs), IfMissing::kCreate);
}

absl::Status CgroupV2::OpenHeldFiles() {
  ZYGO_ASSIGN_OR_RETURN(dir_fd_, sys::OpenDirectory(dir_));
  ZYGO_RETURN_IF_ERROR(
      memory_peak_.Open(absl::StrCat(dir_, "/memory.peak"), OpenCounter::Access::kReadWrite));
  ZYGO_RETURN_IF_ERROR(memory_events_.Open(absl::StrCat(dir_, "/memory.events")));
  ZYGO_RETURN_IF_ERROR(pids_events_.Open(absl::StrCat(dir_, "/pids.events")));
  return pids_current_.Open(absl::StrCat(dir_, "/pids.current"));
}

// Children normally start inside via CLONE_INTO_CGROUP; this serves callers that fork
// without it. Writing a pid that is already a member is a no-op for the kernel.
absl::Status CgroupV2::AttachFromParent(pid_t pid) {
  if (destroy_called_) {
    return absl::FailedPreconditionError(
        absl::StrCat("attach pid ", pid, ": the cgroup was already destroyed"));
  }
  return WriteControlFile(absl::StrCat(dir_, "/cgroup.procs"), absl::StrCat(pid),
                          IfMissing::kCreate);
}

absl::StatusOr<CgroupUsage> CgroupV2::ReadLimitHits() const {
  return ReadLimitHitsFrom(memory_events_, pids_events_);
}

absl::StatusOr<CgroupUsage> CgroupV2::ReadUsage() const {
  ZYGO_ASSIGN_OR_RETURN(CgroupUsage usage, ReadLimitHits());
  ZYGO_ASSIGN_OR_RETURN(usage.memory_peak_bytes, memory_peak_.Read(0));
  const std::string cpu_stat = absl::StrCat(dir_, "/cpu.stat");
  ZYGO_ASSIGN_OR_RETURN(std::string stat, sys::ReadFile(cpu_stat));
  ZYGO_ASSIGN_OR_RETURN(usage.cpu_user_us, KeyedValueOr(stat, "user_usec", cpu_stat, 0));
  ZYGO_ASSIGN_OR_RETURN(usage.cpu_system_us, KeyedValueOr(stat, "system_usec", cpu_stat, 0));
  return usage;
}

absl::Status CgroupV2::KillAll() {
  return KillCgroupMembers(pids_current_, absl::StrCat(dir_, "/cgroup.procs"));
}

// cgroup.kill (Linux 5.14) SIGKILLs every process inside at once, so that rmdir does
// not wait on a sandbox that outlived its supervisor's interest. Only our own cgroup's
// file is written, and only when something is left in it.
absl::Status CgroupV2::KillRemainingProcesses() {
  absl::StatusOr<std::string> procs = sys::ReadFile(absl::StrCat(dir_, "/cgroup.procs"));
  if (!procs.ok() || Words(*procs).empty()) return absl::OkStatus();
  return WriteOptionalControlFile(absl::StrCat(dir_, "/cgroup.kill"), "1");
}

absl::Status CgroupV2::Destroy() {
  destroy_called_ = true;
  if (removed_) return absl::OkStatus();
  dir_fd_.Reset();
  for (OpenCounter* held : {&memory_peak_, &memory_events_, &pids_events_, &pids_current_}) {
    held->Close();
  }
  ZYGO_RETURN_IF_ERROR(KillRemainingProcesses());
  ZYGO_RETURN_IF_ERROR(RemoveCgroupDir(dir_, "processes"));
  removed_ = true;
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Cgroup>> CgroupV2::CreateChild(const CgroupLimits& limits,
                                                              const std::string& prefix) {
  ZYGO_RETURN_IF_ERROR(CheckLimits(limits));
  ZYGO_ASSIGN_OR_RETURN(const std::string name, NewCgroupName(prefix));
  // Fails with EBUSY (explained) while this cgroup holds processes of its own.
  ZYGO_RETURN_IF_ERROR(EnableControllers(dir_).status());
  const std::string dir = absl::StrCat(dir_, "/", name);
  ZYGO_RETURN_IF_ERROR(MakeCgroupDir(dir));
  auto child = std::make_unique<CgroupV2>(dir);
  ZYGO_RETURN_IF_ERROR(child->WriteMemoryLimit(limits.memory_bytes));
  ZYGO_RETURN_IF_ERROR(child->WritePidsLimit(limits.pids_max));
  ZYGO_RETURN_IF_ERROR(child->WriteCpuMax(limits.cpus));
  ZYGO_RETURN_IF_ERROR(child->OpenHeldFiles());
  return std::unique_ptr<Cgroup>(std::move(child));
}

}  // namespace

absl::StatusOr<std::string> ParseV2SelfCgroup(absl::string_view content) {
  for (absl::string_view line : absl::StrSplit(content, '\n', absl::SkipEmpty())) {
    if (!absl::ConsumePrefix(&line, "0::")) continue;
    if (line.empty() || line[0] != '/') {
      return absl::InvalidArgumentError(
          absl::StrCat("malformed v2 line in /proc/self/cgroup: \"0::", line, "\""));
    }
    return std::string(line);
  }
  return absl::NotFoundError("no v2 line (\"0::/path\") in /proc/self/cgroup");
}

bool IsCgroup2Root(const std::string& root) {
  absl::StatusOr<struct statfs> fs = sys::StatFs(root);
  if (!fs.ok()) return false;
  if (fs->f_type == CGROUP2_SUPER_MAGIC) return true;
  if (fs->f_type == CGROUP_SUPER_MAGIC) return false;
  return PathExists(absl::StrCat(root, "/cgroup.controllers"));
}

CgroupV2Driver::CgroupV2Driver(V2PlacementPlan plan, CgroupProbeOptions options)
    : name_prefix_(options.name_prefix),
      mount_root_(options.mount_root),
      placement_(std::move(plan), std::move(options)) {}

std::vector<StaleCgroup> CgroupV2Driver::SweepStale(const StaleSweepOptions& options) {
  // A systemd scope not started yet is new: nothing in it can be stale.
  if (parent_dir().empty()) return {};
  return SweepStaleCgroups(CgroupVersion::kV2, {{parent_dir(), mount_root_}}, name_prefix_,
                           options);
}

absl::StatusOr<std::unique_ptr<Cgroup>> CgroupV2Driver::Create(const CgroupLimits& limits) {
  ZYGO_RETURN_IF_ERROR(CheckLimits(limits));
  ZYGO_RETURN_IF_ERROR(Prepare());
  ZYGO_ASSIGN_OR_RETURN(const std::string name, NewCgroupName(name_prefix_));
  // Must precede the mkdir: a child gets only the controllers enabled in its parent.
  ZYGO_RETURN_IF_ERROR(EnableControllers(parent_dir()).status());
  SweepStale({.remove = true});
  const std::string dir = absl::StrCat(parent_dir(), "/", name);
  ZYGO_RETURN_IF_ERROR(MakeCgroupDir(dir));
  auto cgroup = std::make_unique<CgroupV2>(dir);
  // On failure, `cgroup`'s destructor removes the directory.
  ZYGO_RETURN_IF_ERROR(cgroup->WriteMemoryLimit(limits.memory_bytes));
  ZYGO_RETURN_IF_ERROR(cgroup->WritePidsLimit(limits.pids_max));
  ZYGO_RETURN_IF_ERROR(cgroup->WriteCpuMax(limits.cpus));
  ZYGO_RETURN_IF_ERROR(cgroup->OpenHeldFiles());
  return std::unique_ptr<Cgroup>(std::move(cgroup));
}

}  // namespace zygo::core::internal
