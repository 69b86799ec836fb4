// Reading and writing cgroupfs files for both cgroup drivers, through core/base/sys/fs.h.
#include "core/internal/cgroup_fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <optional>
#include <thread>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "core/base/unique_fd.h"

namespace zygo::core::internal {
namespace {

namespace sys = ::zygo::base::sys;
using ::zygo::base::UniqueFd;

// The kernel rejects a quota below 1 ms (kernel/sched/core.c, min_cfs_quota_period).
constexpr int64_t kMinCpuQuotaUs = 1000;
constexpr auto kRmdirRetryFor = std::chrono::seconds(1);
constexpr auto kRmdirRetrySleep = std::chrono::milliseconds(10);

// Process-wide, so that two drivers with the same prefix never pick the same name.
std::atomic<uint64_t> next_cgroup_number{0};

// `status` with another code and `suffix` added to its message. Keeps the payloads, so
// that sys::ErrnoOf still finds the errno.
absl::Status Amend(const absl::Status& status, absl::StatusCode code, absl::string_view suffix) {
  absl::Status amended(code, absl::StrCat(status.message(), suffix));
  status.ForEachPayload([&amended](absl::string_view url, const absl::Cord& payload) {
    amended.SetPayload(url, payload);
  });
  return amended;
}

absl::StatusOr<int64_t> ParseInt64(absl::string_view text, const std::string& path) {
  int64_t value = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &value)) {
    return absl::InternalError(absl::StrCat("cannot parse \"", text, "\" in ", path));
  }
  return value;
}

}  // namespace

// ---- limits

int64_t CpuQuotaUs(double cpus) { return std::llround(cpus * kCpuPeriodUs); }

absl::Status CheckLimits(const CgroupLimits& limits) {
  if (limits.memory_bytes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("memory_bytes must be >= 0, got ", limits.memory_bytes));
  }
  if (limits.pids_max < 0) {
    return absl::InvalidArgumentError(absl::StrCat("pids_max must be >= 0, got ", limits.pids_max));
  }
  // Written so that NaN fails too.
  if (!(limits.cpus >= 0 && limits.cpus <= 1e6)) {
    return absl::InvalidArgumentError(absl::StrCat("cpus must be in [0, 1e6], got ", limits.cpus));
  }
  if (limits.cpus > 0 && CpuQuotaUs(limits.cpus) < kMinCpuQuotaUs) {
    return absl::InvalidArgumentError(
        absl::StrCat("cpus=", limits.cpus, " gives a CPU quota of ", CpuQuotaUs(limits.cpus),
                     " us per 100 ms; the kernel's minimum is 1000 us (cpus >= 0.01)"));
  }
  return absl::OkStatus();
}

// ---- names and paths

absl::StatusOr<std::string> NewCgroupName(const std::string& prefix) {
  if (prefix.find('/') != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("cgroup name prefix \"", prefix, "\" contains '/'"));
  }
  return absl::StrCat(prefix, ::getpid(), "-", next_cgroup_number.fetch_add(1));
}

bool HasDotDot(absl::string_view path) {
  for (absl::string_view part : absl::StrSplit(path, '/')) {
    if (part == "..") return true;
  }
  return false;
}

std::string CgroupDir(const std::string& mount, const std::string& cgroup_path) {
  std::string dir = cgroup_path == "/" ? mount : absl::StrCat(mount, cgroup_path);
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

bool PathExists(const std::string& path) { return sys::Stat(path).ok(); }

bool IsDirectory(const std::string& path) {
  absl::StatusOr<struct stat> st = sys::Stat(path);
  return st.ok() && S_ISDIR(st->st_mode);
}

std::vector<std::string> Subdirectories(const std::string& dir) {
  std::vector<std::string> names;
  DIR* handle = opendir(dir.c_str());
  if (handle == nullptr) return names;
  while (struct dirent* entry = readdir(handle)) {
    const absl::string_view name = entry->d_name;
    if (entry->d_type == DT_DIR && name != "." && name != "..") names.emplace_back(name);
  }
  closedir(handle);
  return names;
}

// ---- control files

absl::Status WriteControlFile(const std::string& path, absl::string_view value,
                              IfMissing if_missing) {
  absl::StatusOr<UniqueFd> fd = sys::OpenWriteOnly(path, if_missing);
  if (!fd.ok()) {
    // cgroupfs cannot create files: O_CREAT of a missing one fails with EACCES, which
    // would wrongly read as a permission problem.
    if (!absl::IsNotFound(fd.status()) && !PathExists(path)) {
      return Amend(fd.status(), absl::StatusCode::kNotFound, "; the file does not exist");
    }
    return fd.status();
  }
  ZYGO_ASSIGN_OR_RETURN(const size_t written, sys::WriteOnce(*fd, value, path));
  if (written != value.size()) {
    return absl::InternalError(absl::StrCat("write(", path, ", \"", value, "\"): wrote ", written,
                                            " of ", value.size(), " bytes"));
  }
  return absl::OkStatus();
}

absl::Status WriteOptionalControlFile(const std::string& path, absl::string_view value) {
  absl::Status written = WriteControlFile(path, value, IfMissing::kFail);
  if (absl::IsNotFound(written)) return absl::OkStatus();
  return written;
}

absl::StatusOr<int64_t> KeyedValueOr(absl::string_view content, absl::string_view key,
                                     const std::string& path, int64_t if_absent) {
  for (absl::string_view line : absl::StrSplit(content, '\n', absl::SkipEmpty())) {
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(line, ' ');
    if (kv.first == key) return ParseInt64(kv.second, path);
  }
  return if_absent;
}

absl::StatusOr<int64_t> ReadInt64Or(const std::string& path, int64_t if_absent) {
  absl::StatusOr<std::string> content = sys::ReadFile(path);
  if (absl::IsNotFound(content.status())) return if_absent;
  if (!content.ok()) return content.status();
  return ParseInt64(*content, path);
}

absl::Status OpenCounter::Open(const std::string& path, Access access) {
  path_ = path;
  writable_ = false;
  if (access == Access::kReadWrite) {
    fd_.Reset(::open(path.c_str(), O_RDWR | O_CLOEXEC));
    writable_ = fd_.valid();
  }
  if (!fd_.valid() && (access == Access::kRead || errno == EACCES || errno == EPERM)) {
    fd_.Reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  }
  if (fd_.valid() || errno == ENOENT) return absl::OkStatus();
  return base::LastErrnoStatus([&] { return absl::StrCat("open(", path, ")"); });
}

absl::StatusOr<std::string> OpenCounter::ReadContent() const {
  if (!fd_.valid()) {
    if (path_.empty()) return absl::NotFoundError("no counter file was opened");
    return sys::ReadFile(path_);
  }
  std::string content;
  char buffer[4096];
  for (;;) {
    const ssize_t n = base::RetryOnEintr([&] {
      return ::pread(fd_.get(), buffer, sizeof(buffer), static_cast<off_t>(content.size()));
    });
    if (n < 0) return base::LastErrnoStatus([&] { return absl::StrCat("pread(", path_, ")"); });
    content.append(buffer, static_cast<size_t>(n));
    // A show function's output comes whole up to the size asked for, so a short read is
    // the end: one syscall for a counter.
    if (static_cast<size_t>(n) < sizeof(buffer)) return content;
  }
}

absl::StatusOr<int64_t> OpenCounter::Read(int64_t if_absent) const {
  absl::StatusOr<std::string> content = ReadContent();
  if (absl::IsNotFound(content.status())) return if_absent;
  if (!content.ok()) return content.status();
  return ParseInt64(*content, path_);
}

absl::StatusOr<int64_t> OpenCounter::ReadKeyed(absl::string_view key, int64_t if_absent) const {
  ZYGO_ASSIGN_OR_RETURN(std::string content, ReadContent());
  return KeyedValueOr(content, key, path_, if_absent);
}

absl::Status OpenCounter::Reset() {
  if (!writable_) return WriteControlFile(path_, "0", IfMissing::kFail);
  const ssize_t n = base::RetryOnEintr([&] { return ::pwrite(fd_.get(), "0", 1, 0); });
  if (n == 1) return absl::OkStatus();
  if (n < 0)
    return base::LastErrnoStatus([&] { return absl::StrCat("write(", path_, ", \"0\")"); });
  return absl::InternalError(absl::StrCat("write(", path_, ", \"0\") wrote nothing"));
}

absl::StatusOr<CgroupUsage> ReadLimitHitsFrom(const OpenCounter& oom_events,
                                              const OpenCounter& pids_events) {
  CgroupUsage usage;
  ZYGO_ASSIGN_OR_RETURN(usage.oom_kills, oom_events.ReadKeyed("oom_kill", 0));
  ZYGO_ASSIGN_OR_RETURN(usage.pids_max_hits, pids_events.ReadKeyed("max", 0));
  return usage;
}

// ---- directories

absl::Status MakeCgroupDir(const std::string& path) {
  absl::Status made = sys::MakeDirectory(path, 0755);
  const std::optional<int> err = sys::ErrnoOf(made);
  if (err == EACCES || err == EPERM || err == EROFS) {
    return Amend(made, absl::StatusCode::kPermissionDenied, "; no cgroup can be created there");
  }
  return made;
}

absl::Status KillCgroupMembers(const OpenCounter& member_count, const std::string& procs_file) {
  absl::StatusOr<int64_t> members = member_count.Read(-1);
  if (members.ok() && *members == 0) return absl::OkStatus();
  for (int attempt = 0; attempt < 1000; ++attempt) {
    absl::StatusOr<std::string> procs = base::sys::ReadFile(procs_file);
    if (!procs.ok()) {
      // The cgroup is gone: nothing left to kill.
      if (absl::IsNotFound(procs.status())) return absl::OkStatus();
      return procs.status();
    }
    bool any = false;
    for (absl::string_view word : absl::StrSplit(*procs, '\n', absl::SkipEmpty())) {
      int pid = 0;
      if (!absl::SimpleAtoi(word, &pid) || pid <= 0) continue;
      any = true;
      kill(pid, SIGKILL);
    }
    if (!any) return absl::OkStatus();
    usleep(1000);
  }
  return absl::DeadlineExceededError(
      absl::StrCat("processes in ", procs_file, " survived SIGKILL for 1 s"));
}

absl::Status RemoveCgroupDir(const std::string& path, absl::string_view members) {
  const auto deadline = std::chrono::steady_clock::now() + kRmdirRetryFor;
  for (;;) {
    absl::Status removed = sys::RemoveDirectory(path);
    if (removed.ok() || absl::IsNotFound(removed)) return absl::OkStatus();
    const std::optional<int> err = sys::ErrnoOf(removed);
    if (err == EBUSY && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(kRmdirRetrySleep);
      continue;
    }
    if (err == EBUSY) {
      return Amend(removed, removed.code(), absl::StrCat(" (", members, " remain after 1 s)"));
    }
    if (err == ENOTEMPTY) {
      // rmdir of a real cgroup ignores its control files; only a plain directory
      // (a fake tree in tests) reports ENOTEMPTY, and then we must not delete files.
      return Amend(removed, absl::StatusCode::kFailedPrecondition, "; not a cgroupfs directory");
    }
    return removed;
  }
}

}  // namespace zygo::core::internal
