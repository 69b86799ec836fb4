// The cgroup v2 driver: enable the controllers for our children, make one directory,
// write the limits, hold an fd for CLONE_INTO_CGROUP, read usage from its event files.
#include "core/internal/cgroup_v2.h"

#include "core/internal/cgroup_sweep.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "core/base/unique_fd.h"

namespace zygo::core::internal {
namespace {

using ::zygo::base::ErrnoStatus;
using ::zygo::base::UniqueFd;

constexpr int64_t kCpuPeriodUs = 100000;
// The kernel rejects a cpu.max quota below 1 ms (kernel/sched/core.c).
constexpr int64_t kMinCpuQuotaUs = 1000;
constexpr auto kRmdirRetryFor = std::chrono::seconds(1);
constexpr auto kRmdirRetrySleep = std::chrono::milliseconds(10);
constexpr const char* kControllers[] = {"memory", "pids", "cpu"};

// Process-wide, so that two drivers with the same prefix never pick the same name.
std::atomic<uint64_t> next_cgroup_number{0};

// ---- cgroupfs file helpers. The v1 driver keeps its own copy: facility files do not
// ---- call one another (STYLE.md A.3).

bool PathExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
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
// `failed_errno`, when given, receives the errno of a failed call.
absl::Status WriteControlFile(const std::string& path, absl::string_view value,
                              IfMissing if_missing, int* failed_errno = nullptr) {
  const int flags =
      O_WRONLY | O_CLOEXEC | O_TRUNC | (if_missing == IfMissing::kCreate ? O_CREAT : 0);
  int fd;
  do {
    fd = ::open(path.c_str(), flags, 0644);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    const int err = errno;
    if (failed_errno != nullptr) *failed_errno = err;
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
  if (n < 0) {
    if (failed_errno != nullptr) *failed_errno = errno;
    return ErrnoStatus(errno, absl::StrCat("write(", path, ", \"", value, "\")"));
  }
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

// The value of the line "key N" of a flat-keyed file (memory.events, pids.events,
// cpu.stat), or `if_absent` when no line has that key.
absl::StatusOr<int64_t> KeyedValueOr(absl::string_view content, absl::string_view key,
                                     const std::string& path, int64_t if_absent) {
  for (absl::string_view line : absl::StrSplit(content, '\n', absl::SkipEmpty())) {
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(line, ' ');
    if (kv.first == key) return ParseInt64(kv.second, path);
  }
  return if_absent;
}

// The value of `key` in the flat-keyed file at `path`.
absl::StatusOr<int64_t> ReadKeyedValueOr(const std::string& path, absl::string_view key,
                                         int64_t if_absent) {
  ZYGO_ASSIGN_OR_RETURN(std::string content, ReadSmallFile(path));
  return KeyedValueOr(content, key, path, if_absent);
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

// Retries EBUSY: a cgroup cannot be removed while it has processes, and a child that
// was just reaped can stay listed briefly while the kernel finishes its exit.
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
                                         err == EBUSY ? " (processes remain after 1 s)" : ""));
  }
}

std::vector<std::string> Words(absl::string_view text) {
  return absl::StrSplit(text, absl::ByAnyChar(" \t\n"), absl::SkipEmpty());
}

bool Contains(const std::vector<std::string>& words, absl::string_view word) {
  for (const std::string& w : words) {
    if (w == word) return true;
  }
  return false;
}

bool HasDotDot(absl::string_view path) {
  for (absl::string_view part : absl::StrSplit(path, '/')) {
    if (part == "..") return true;
  }
  return false;
}

// ---- limits

int64_t CpuQuotaUs(double cpus) { return std::llround(cpus * kCpuPeriodUs); }

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
  if (limits.cpus > 0 && CpuQuotaUs(limits.cpus) < kMinCpuQuotaUs) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cpus=", limits.cpus, " gives a quota of ", CpuQuotaUs(limits.cpus),
        " us per 100 ms; the kernel's minimum is 1000 us (cpus >= 0.01)"));
  }
  return absl::OkStatus();
}

// Controllers reach a child only when its parent lists them in cgroup.subtree_control.
// Writes just the missing ones, so that a parent set up by its owner is left alone.
absl::Status EnableControllers(const std::string& parent_dir) {
  const std::string path = absl::StrCat(parent_dir, "/cgroup.subtree_control");
  ZYGO_ASSIGN_OR_RETURN(std::string content, ReadSmallFile(path));
  const std::vector<std::string> enabled = Words(content);
  std::vector<std::string> to_enable;
  for (const char* controller : kControllers) {
    if (!Contains(enabled, controller)) to_enable.push_back(absl::StrCat("+", controller));
  }
  if (to_enable.empty()) return absl::OkStatus();
  int err = 0;
  absl::Status written =
      WriteControlFile(path, absl::StrJoin(to_enable, " "), IfMissing::kFail, &err);
  if (err == EBUSY) {
    return absl::FailedPreconditionError(absl::StrCat(
        "write(", path, ", \"", absl::StrJoin(to_enable, " "),
        "\"): EBUSY: cgroup v2's no-internal-process rule forbids enabling controllers "
        "for the children of a (non-root) cgroup that has processes of its own, and ",
        parent_dir, " has some; run the supervisor in a leaf cgroup of a delegated subtree "
        "(e.g. move itself into <own cgroup>/supervisor first) so its parent has none"));
  }
  return written;
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
  absl::StatusOr<CgroupUsage> ReadUsage() const override;
  absl::Status Destroy() override;
  std::vector<std::string> paths() const override { return {dir_}; }

  // Create's steps after the mkdir, in order.
  absl::Status WriteMemoryLimit(int64_t bytes);
  absl::Status WritePidsLimit(int64_t pids_max);
  absl::Status WriteCpuMax(double cpus);
  absl::Status OpenDirFd();

 private:
  absl::Status KillRemainingProcesses();

  std::string dir_;
  UniqueFd dir_fd_;
  bool removed_ = false;
  bool destroy_called_ = false;
};

absl::Status CgroupV2::WriteMemoryLimit(int64_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  ZYGO_RETURN_IF_ERROR(WriteControlFile(absl::StrCat(dir_, "/memory.max"),
                                        absl::StrCat(bytes), IfMissing::kCreate));
  // No swap, so that swap cannot extend the limit. The file is absent without swap
  // accounting (CONFIG_MEMCG_SWAP off, or swapaccount=0); then there is nothing to limit.
  absl::Status swap =
      WriteControlFile(absl::StrCat(dir_, "/memory.swap.max"), "0", IfMissing::kFail);
  if (absl::IsNotFound(swap)) return absl::OkStatus();
  return swap;
}

absl::Status CgroupV2::WritePidsLimit(int64_t pids_max) {
  if (pids_max == 0) return absl::OkStatus();
  return WriteControlFile(absl::StrCat(dir_, "/pids.max"), absl::StrCat(pids_max),
                          IfMissing::kCreate);
}

absl::Status CgroupV2::WriteCpuMax(double cpus) {
  if (cpus == 0) return absl::OkStatus();
  return WriteControlFile(absl::StrCat(dir_, "/cpu.max"),
                          absl::StrCat(CpuQuotaUs(cpus), " ", kCpuPeriodUs),
                          IfMissing::kCreate);
}

absl::Status CgroupV2::OpenDirFd() {
  int fd;
  do {
    fd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    return ErrnoStatus(errno, absl::StrCat("open(", dir_, ", O_RDONLY|O_DIRECTORY)"));
  }
  dir_fd_.Reset(fd);
  return absl::OkStatus();
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

absl::StatusOr<CgroupUsage> CgroupV2::ReadUsage() const {
  CgroupUsage usage;
  // memory.events' oom_kill appeared in Linux 4.13; older kernels count nothing.
  ZYGO_ASSIGN_OR_RETURN(usage.oom_kills,
                        ReadKeyedValueOr(absl::StrCat(dir_, "/memory.events"), "oom_kill", 0));
  ZYGO_ASSIGN_OR_RETURN(usage.pids_max_hits,
                        ReadKeyedValueOr(absl::StrCat(dir_, "/pids.events"), "max", 0));
  // memory.peak appeared in Linux 5.19.
  ZYGO_ASSIGN_OR_RETURN(usage.memory_peak_bytes,
                        ReadInt64Or(absl::StrCat(dir_, "/memory.peak"), 0));
  const std::string cpu_stat = absl::StrCat(dir_, "/cpu.stat");
  ZYGO_ASSIGN_OR_RETURN(std::string stat, ReadSmallFile(cpu_stat));
  ZYGO_ASSIGN_OR_RETURN(usage.cpu_user_us, KeyedValueOr(stat, "user_usec", cpu_stat, 0));
  ZYGO_ASSIGN_OR_RETURN(usage.cpu_system_us, KeyedValueOr(stat, "system_usec", cpu_stat, 0));
  return usage;
}

// cgroup.kill (Linux 5.14) SIGKILLs every process inside at once, so that rmdir does
// not wait on a sandbox that outlived its supervisor's interest. Only our own cgroup's
// file is written, and only when something is left in it.
absl::Status CgroupV2::KillRemainingProcesses() {
  absl::StatusOr<std::string> procs = ReadSmallFile(absl::StrCat(dir_, "/cgroup.procs"));
  if (!procs.ok() || Words(*procs).empty()) return absl::OkStatus();
  const std::string kill = absl::StrCat(dir_, "/cgroup.kill");
  if (!PathExists(kill)) return absl::OkStatus();
  return WriteControlFile(kill, "1", IfMissing::kFail);
}

absl::Status CgroupV2::Destroy() {
  destroy_called_ = true;
  if (removed_) return absl::OkStatus();
  dir_fd_.Reset();
  ZYGO_RETURN_IF_ERROR(KillRemainingProcesses());
  ZYGO_RETURN_IF_ERROR(RemoveCgroupDir(dir_));
  removed_ = true;
  return absl::OkStatus();
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
  struct statfs fs;
  if (::statfs(root.c_str(), &fs) != 0) return false;
  if (fs.f_type == CGROUP2_SUPER_MAGIC) return true;
  if (fs.f_type == CGROUP_SUPER_MAGIC) return false;
  return PathExists(absl::StrCat(root, "/cgroup.controllers"));
}

absl::StatusOr<std::string> ResolveV2Parent(const CgroupProbeOptions& options) {
  ZYGO_ASSIGN_OR_RETURN(std::string self, ReadSmallFile(options.self_cgroup_file));
  ZYGO_ASSIGN_OR_RETURN(std::string own, ParseV2SelfCgroup(self));
  // A cgroup outside our cgroup namespace shows as "/.."; we could not reach it.
  if (HasDotDot(own)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "own cgroup \"", own, "\" (", options.self_cgroup_file,
        ") is outside this cgroup namespace"));
  }
  std::string parent = own == "/" ? options.mount_root : absl::StrCat(options.mount_root, own);
  while (parent.size() > 1 && parent.back() == '/') parent.pop_back();
  const std::string controllers_path = absl::StrCat(parent, "/cgroup.controllers");
  ZYGO_ASSIGN_OR_RETURN(std::string controllers, ReadSmallFile(controllers_path));
  const std::vector<std::string> available = Words(controllers);
  std::vector<std::string> missing;
  for (const char* controller : kControllers) {
    if (!Contains(available, controller)) missing.emplace_back(controller);
  }
  if (!missing.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        controllers_path, " lacks ", absl::StrJoin(missing, ", "), " (has: \"",
        absl::StripAsciiWhitespace(controllers),
        "\"); the parent cgroup must delegate memory, pids and cpu to ours"));
  }
  return parent;
}

CgroupV2Driver::CgroupV2Driver(std::string parent_dir, std::string name_prefix)
    : parent_dir_(std::move(parent_dir)), name_prefix_(std::move(name_prefix)) {}

absl::StatusOr<std::unique_ptr<Cgroup>> CgroupV2Driver::Create(const CgroupLimits& limits) {
  ZYGO_RETURN_IF_ERROR(CheckLimits(limits));
  if (name_prefix_.find('/') != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("cgroup name prefix \"", name_prefix_, "\" contains '/'"));
  }
  // Must precede the mkdir: a child gets only the controllers enabled in its parent.
  ZYGO_RETURN_IF_ERROR(EnableControllers(parent_dir_));
  SweepStaleCgroups(parent_dir_, name_prefix_);
  const std::string dir = absl::StrCat(parent_dir_, "/", name_prefix_, ::getpid(), "-",
                                       next_cgroup_number.fetch_add(1));
  ZYGO_RETURN_IF_ERROR(MakeCgroupDir(dir));
  auto cgroup = std::make_unique<CgroupV2>(dir);
  // On failure, `cgroup`'s destructor removes the directory.
  ZYGO_RETURN_IF_ERROR(cgroup->WriteMemoryLimit(limits.memory_bytes));
  ZYGO_RETURN_IF_ERROR(cgroup->WritePidsLimit(limits.pids_max));
  ZYGO_RETURN_IF_ERROR(cgroup->WriteCpuMax(limits.cpus));
  ZYGO_RETURN_IF_ERROR(cgroup->OpenDirFd());
  return std::unique_ptr<Cgroup>(std::move(cgroup));
}

}  // namespace zygo::core::internal
