// Filesystem wrappers: one libc call each, EINTR retried, errno kept as a Status payload.
#include "core/base/sys/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "absl/strings/ascii.h"
#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/types/optional.h"
#include "core/base/errno_status.h"
#include "core/base/sys/process.h"

namespace zygo::base::sys {
namespace {

constexpr char kErrnoPayloadUrl[] = "type.zygo/errno";

absl::Status Failed(int err, absl::string_view what) {
  absl::Status status = ErrnoStatus(err, what);
  status.SetPayload(kErrnoPayloadUrl, absl::Cord(absl::StrCat(err)));
  return status;
}

// What a libc call returned, and its errno when that is negative.
template <typename T>
struct CallResult {
  T rc;
  int err;
};

// Calls `call` again while it fails with EINTR. errno is read at once, before the
// error message is built (building it allocates, which may change errno).
template <typename Call>
auto RetryOnEintr(Call call) -> CallResult<decltype(call())> {
  decltype(call()) rc;
  do {
    rc = call();
  } while (rc < 0 && errno == EINTR);
  return {rc, rc < 0 ? errno : 0};
}

absl::StatusOr<UniqueFd> Open(const std::string& path, int flags, absl::string_view flag_names) {
  const auto [fd, err] =
      RetryOnEintr([&] { return ::open(path.c_str(), flags | O_CLOEXEC, 0644); });
  if (fd < 0) return Failed(err, absl::StrCat("open(", path, ", ", flag_names, ")"));
  return UniqueFd(fd);
}

}  // namespace

std::optional<int> ErrnoOf(const absl::Status& status) {
  absl::optional<absl::Cord> payload = status.GetPayload(kErrnoPayloadUrl);
  int err = 0;
  if (!payload.has_value() || !absl::SimpleAtoi(std::string(*payload), &err)) {
    return std::nullopt;
  }
  return err;
}

absl::StatusOr<UniqueFd> OpenReadOnly(const std::string& path) {
  return Open(path, O_RDONLY, "O_RDONLY");
}

absl::StatusOr<UniqueFd> OpenDirectory(const std::string& path) {
  return Open(path, O_RDONLY | O_DIRECTORY, "O_RDONLY|O_DIRECTORY");
}

absl::StatusOr<UniqueFd> OpenWriteOnly(const std::string& path, IfMissing if_missing) {
  if (if_missing == IfMissing::kCreate) {
    return Open(path, O_WRONLY | O_TRUNC | O_CREAT, "O_WRONLY|O_TRUNC|O_CREAT");
  }
  return Open(path, O_WRONLY | O_TRUNC, "O_WRONLY|O_TRUNC");
}

absl::StatusOr<std::string> ReadToEnd(const UniqueFd& fd, const std::string& path) {
  std::string content;
  char buffer[4096];
  for (;;) {
    const auto [n, err] = RetryOnEintr([&] { return ::read(fd.get(), buffer, sizeof(buffer)); });
    if (n < 0) return Failed(err, absl::StrCat("read(", path, ")"));
    if (n == 0) return content;
    content.append(buffer, static_cast<size_t>(n));
  }
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  absl::StatusOr<UniqueFd> fd = OpenReadOnly(path);
  if (!fd.ok()) return fd.status();
  return ReadToEnd(*fd, path);
}

absl::StatusOr<size_t> WriteOnce(const UniqueFd& fd, absl::string_view data,
                                 const std::string& path) {
  const auto [n, err] = RetryOnEintr([&] { return ::write(fd.get(), data.data(), data.size()); });
  if (n < 0) return Failed(err, absl::StrCat("write(", path, ", \"", data, "\")"));
  return static_cast<size_t>(n);
}

absl::Status WriteAll(const UniqueFd& fd, const void* data, size_t size, absl::string_view name) {
  const char* bytes = static_cast<const char*>(data);
  for (size_t done = 0; done < size;) {
    const auto [n, err] =
        RetryOnEintr([&] { return ::write(fd.get(), bytes + done, size - done); });
    if (n <= 0) {
      return Failed(n < 0 ? err : EIO, absl::StrCat("write(", name, ", ", size, " bytes)"));
    }
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::Status MakeDirectory(const std::string& path, mode_t mode) {
  const auto [rc, err] = RetryOnEintr([&] { return ::mkdir(path.c_str(), mode); });
  if (rc == 0) return absl::OkStatus();
  return Failed(err, absl::StrFormat("mkdir(%s, %#o)", path, mode));
}

absl::Status RemoveDirectory(const std::string& path) {
  const auto [rc, err] = RetryOnEintr([&] { return ::rmdir(path.c_str()); });
  if (rc == 0) return absl::OkStatus();
  return Failed(err, absl::StrCat("rmdir(", path, ")"));
}

absl::Status CheckWritable(const std::string& path) {
  const auto [rc, err] =
      RetryOnEintr([&] { return ::faccessat(AT_FDCWD, path.c_str(), W_OK, AT_EACCESS); });
  if (rc == 0) return absl::OkStatus();
  return Failed(err, absl::StrCat("access(", path, ", W_OK)"));
}

absl::StatusOr<struct stat> Stat(const std::string& path) {
  struct stat st;
  const auto [rc, err] = RetryOnEintr([&] { return ::stat(path.c_str(), &st); });
  if (rc == 0) return st;
  return Failed(err, absl::StrCat("stat(", path, ")"));
}

absl::StatusOr<struct statfs> StatFs(const std::string& path) {
  struct statfs fs;
  const auto [rc, err] = RetryOnEintr([&] { return ::statfs(path.c_str(), &fs); });
  if (rc == 0) return fs;
  return Failed(err, absl::StrCat("statfs(", path, ")"));
}

absl::StatusOr<std::vector<pid_t>> ReadNamespacePids(pid_t pid) {
  const std::string path = absl::StrCat("/proc/", pid, "/status");
  absl::StatusOr<std::string> status = ReadFile(path);
  if (!status.ok()) return status.status();
  const size_t at = status->find("\nNSpid:");
  if (at == std::string::npos) {
    return absl::InternalError(absl::StrCat(path, " has no NSpid line"));
  }
  const size_t end = status->find('\n', at + 1);
  std::vector<pid_t> pids;
  for (absl::string_view word : absl::StrSplit(
           absl::string_view(*status).substr(at + 7, end == std::string::npos ? end : end - at - 7),
           absl::ByAnyChar(" \t"), absl::SkipEmpty())) {
    int value = 0;
    if (!absl::SimpleAtoi(word, &value)) {
      return absl::InternalError(absl::StrCat(path, ": NSpid holds \"", word, "\""));
    }
    pids.push_back(static_cast<pid_t>(value));
  }
  if (pids.empty()) return absl::InternalError(absl::StrCat(path, ": NSpid is empty"));
  return pids;
}

absl::StatusOr<pid_t> ReadParentPid(pid_t pid) {
  const std::string path = absl::StrCat("/proc/", pid, "/status");
  absl::StatusOr<std::string> status = ReadFile(path);
  if (!status.ok()) return status.status();
  const size_t at = status->find("\nPPid:");
  int parent = 0;
  if (at == std::string::npos ||
      !absl::SimpleAtoi(absl::StripAsciiWhitespace(absl::string_view(*status).substr(
                            at + 6, status->find('\n', at + 1) - at - 6)),
                        &parent)) {
    return absl::InternalError(absl::StrCat(path, " names no parent (no PPid line)"));
  }
  return static_cast<pid_t>(parent);
}

absl::StatusOr<pid_t> PidfdParentPid(int pidfd, pid_t pid) {
  PidfdInfo info;
  const int got = RawPidfdGetInfo(pidfd, &info);
  if (got == 0 && (info.mask & kPidfdInfoPid) != 0) return static_cast<pid_t>(info.ppid);
  if (got == -ESRCH) return absl::NotFoundError(absl::StrCat("process ", pid, " is gone"));
  return ReadParentPid(pid);
}

}  // namespace zygo::base::sys
