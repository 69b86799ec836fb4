// Reading and writing cgroupfs files, shared by the v1 and v2 drivers: control files and
// their counters, cgroup directories and their names, and the limit values written into
// them. Parent side; needs whatever access the files themselves need.
#ifndef ZYGO_CORE_INTERNAL_CGROUP_FS_H_
#define ZYGO_CORE_INTERNAL_CGROUP_FS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/base/sys/fs.h"
#include "core/base/unique_fd.h"
#include "core/cgroup.h"

namespace zygo::core::internal {

// ---- limits

// Both drivers give the CPU quota per period of 100 ms (v1 cpu.cfs_period_us, the
// second field of v2 cpu.max).
inline constexpr int64_t kCpuPeriodUs = 100000;

// The quota per kCpuPeriodUs that `cpus` CPUs get, in microseconds.
int64_t CpuQuotaUs(double cpus);

// InvalidArgument for limits the kernel would reject: negative ones, cpus outside
// [0, 1e6] (or NaN), or a CPU quota below the kernel's minimum of 1 ms.
absl::Status CheckLimits(const CgroupLimits& limits);

// ---- names and paths

// A new cgroup name, "<prefix><pid>-<n>", never returned twice in this process.
// InvalidArgument when `prefix` contains '/'.
absl::StatusOr<std::string> NewCgroupName(const std::string& prefix);

// True when a component of `path` is "..": /proc/self/cgroup shows a cgroup outside our
// cgroup namespace that way.
bool HasDotDot(absl::string_view path);

// The directory of `cgroup_path` (a /proc/self/cgroup path, starting with '/') below
// the hierarchy mounted at `mount`, without a trailing '/'.
std::string CgroupDir(const std::string& mount, const std::string& cgroup_path);

bool PathExists(const std::string& path);
bool IsDirectory(const std::string& path);

// The names of `dir`'s subdirectories (symlinks not followed): on cgroupfs, exactly its
// child cgroups. Empty when `dir` cannot be read.
std::vector<std::string> Subdirectories(const std::string& dir);

// ---- control files

// kCreate for files that every cgroup has; kFail for those that may be absent, whose
// absence then shows as NotFound.
using IfMissing = ::zygo::base::sys::IfMissing;

// Writes `value` with one write(2) (cgroupfs parses each write as one whole value).
// A control file exists as soon as its cgroup directory does, so kCreate's O_CREAT is
// a no-op on cgroupfs; it lets the same code write into a plain directory (the fake
// trees of unit tests). The Status carries the errno (base::sys::ErrnoOf).
absl::Status WriteControlFile(const std::string& path, absl::string_view value,
                              IfMissing if_missing);

// WriteControlFile of a file that only some kernels or configurations provide: OK,
// writing nothing, when it does not exist.
absl::Status WriteOptionalControlFile(const std::string& path, absl::string_view value);

// The value of the line "key N" of `content`, a flat-keyed file read from `path`
// (memory.events, memory.oom_control, pids.events, cpu.stat), or `if_absent` when no
// line has that key. Internal when the value is not a number.
absl::StatusOr<int64_t> KeyedValueOr(absl::string_view content, absl::string_view key,
                                     const std::string& path, int64_t if_absent);

// A single-number file, or `if_absent` when the kernel does not provide it.
absl::StatusOr<int64_t> ReadInt64Or(const std::string& path, int64_t if_absent);

// A counter file held open (memory.peak, memory.max_usage_in_bytes, memory.oom_control,
// pids.events, pids.current), for a value read on every request. A pread from offset 0
// runs the kernel's show function again, so a read is one syscall rather than open, read
// and close (about 5 us against 30 us on these VMs). It also keeps v2's memory.peak right
// on Linux 6.12+, where a reset holds only for reads through the file descriptor that wrote
// it. Not for v1's cgroup.procs and tasks: a second read through one open file may be
// served from the pid list the first one built, up to a second old.
class OpenCounter {
 public:
  enum class Access { kRead, kReadWrite };
  // Opens `path` for reading and, with kReadWrite where the file allows, writing. A file
  // that does not exist reads as the caller's `if_absent`; any other failure is returned.
  absl::Status Open(const std::string& path, Access access = Access::kRead);
  // A single-number file.
  absl::StatusOr<int64_t> Read(int64_t if_absent) const;
  // The value of the line "key N" of a flat-keyed file (memory.events, memory.oom_control,
  // pids.events), or `if_absent` when no line has that key. NotFound when the file is
  // missing: these files are not optional.
  absl::StatusOr<int64_t> ReadKeyed(absl::string_view key, int64_t if_absent) const;
  // Writes "0" through the same descriptor (both drivers' peak reset). NotFound when the
  // file does not exist.
  absl::Status Reset();
  void Close() { fd_.Reset(); }

 private:
  // The whole file from offset 0; NotFound when it did not exist at Open and still does
  // not (it is then opened afresh on each read, as before it was held).
  absl::StatusOr<std::string> ReadContent() const;

  std::string path_;
  base::UniqueFd fd_;
  bool writable_ = false;
};

// What a cgroup's limits stopped, both drivers' way: the OOM kills on the oom_kill line of
// `oom_events` (v2's memory.events, v1's memory.oom_control; Linux 4.13+, older kernels
// count nothing) and the forks refused at pids.max on the max line of `pids_events`.
absl::StatusOr<CgroupUsage> ReadLimitHitsFrom(const OpenCounter& oom_events,
                                              const OpenCounter& pids_events);

// ---- directories

// mkdir(path, 0755). PermissionDenied naming `path` when the caller may not make a
// cgroup there (EACCES, EPERM, EROFS).
absl::Status MakeCgroupDir(const std::string& path);

// SIGKILLs every pid listed in `procs_file` (a cgroup.procs), re-reading it until it is
// empty, for up to 1 s: a member may fork while the others are being killed. Only
// members of that cgroup are signalled.
// `member_count` (pids.current, held open) is read first: after most requests nothing is
// left, and then the list, an open of its own, is not read at all.
absl::Status KillCgroupMembers(const OpenCounter& member_count, const std::string& procs_file);

// rmdir(path), retrying EBUSY for up to 1 s: a cgroup cannot be removed while it has
// members, and a child that was just reaped can stay listed briefly while the kernel
// finishes its exit. `members` names them in the error ("tasks" on v1, "processes" on
// v2). OK when `path` is gone already; FailedPrecondition for a plain directory with
// files in it (a fake tree in tests), which is never emptied.
absl::Status RemoveCgroupDir(const std::string& path, absl::string_view members);

}  // namespace zygo::core::internal

#endif  // ZYGO_CORE_INTERNAL_CGROUP_FS_H_
