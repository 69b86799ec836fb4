// Filesystem calls (open, read, write, mkdir, rmdir, stat, statfs) for parent-side code.
// Each wrapper retries EINTR, captures errno at once and returns a Status that names the
// call and its path; none logs. They allocate, so code between fork and exec must not
// use them (it has the raw, async-signal-safe headers next to this one).
#ifndef ZYGO_CORE_BASE_SYS_FS_H_
#define ZYGO_CORE_BASE_SYS_FS_H_

#include <sys/stat.h>
#include <sys/types.h>
#include <sys/vfs.h>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/base/unique_fd.h"

namespace zygo::base::sys {

// The errno that one of the wrappers below failed with. The Status code alone cannot
// always tell (EBUSY, EROFS and ENOTEMPTY all map to Internal). Empty for a Status that
// no wrapper made.
std::optional<int> ErrnoOf(const absl::Status& status);

// What OpenWriteOnly does when nothing exists at the path.
enum class IfMissing { kFail, kCreate };

// open(path, O_RDONLY|O_CLOEXEC).
absl::StatusOr<UniqueFd> OpenReadOnly(const std::string& path);

// open(path, O_RDONLY|O_DIRECTORY|O_CLOEXEC).
absl::StatusOr<UniqueFd> OpenDirectory(const std::string& path);

// open(path, O_WRONLY|O_TRUNC|O_CLOEXEC), adding O_CREAT with mode 0644 for kCreate.
absl::StatusOr<UniqueFd> OpenWriteOnly(const std::string& path, IfMissing if_missing);

// read(2)s `fd` to its end. `path` only names the file in errors.
absl::StatusOr<std::string> ReadToEnd(const UniqueFd& fd, const std::string& path);

// OpenReadOnly, then ReadToEnd.
absl::StatusOr<std::string> ReadFile(const std::string& path);

// One write(2) of `data`. Returns how many bytes it wrote, which may be fewer.
absl::StatusOr<size_t> WriteOnce(const UniqueFd& fd, absl::string_view data,
                                 const std::string& path);

// write(2)s all `size` bytes at `data`, from the fd's offset on, however many calls that
// takes; a write that makes no progress is EIO. `name` only names the file in errors
// ("write(NAME, SIZE bytes)").
absl::Status WriteAll(const UniqueFd& fd, const void* data, size_t size, absl::string_view name);

// mkdir(path, mode).
absl::Status MakeDirectory(const std::string& path, mode_t mode);

// rmdir(path).
absl::Status RemoveDirectory(const std::string& path);

// access(path, W_OK) with the effective ids (faccessat AT_EACCESS): OK when this process
// may write `path`, as the kernel would decide for an open or mkdir.
absl::Status CheckWritable(const std::string& path);

// stat(path), following symlinks.
absl::StatusOr<struct stat> Stat(const std::string& path);

// statfs(path): the filesystem `path` is on (f_type tells which kind).
absl::StatusOr<struct statfs> StatFs(const std::string& path);

// The pids of `pid` in each pid namespace it is in, from the reader's down to its own
// (/proc/<pid>/status NSpid). NotFound when the process is gone; Internal without the line.
absl::StatusOr<std::vector<pid_t>> ReadNamespacePids(pid_t pid);

// The parent of `pid` as /proc/<pid>/status names it (in the reader's pid namespace).
// NotFound when the process is gone; Internal when the file has no PPid line.
absl::StatusOr<pid_t> ReadParentPid(pid_t pid);

// The parent of the process `pidfd` names (which is `pid`), in the caller's pid namespace:
// one PIDFD_GET_INFO ioctl, or ReadParentPid on kernels before 6.13. NotFound when the
// process is gone.
absl::StatusOr<pid_t> PidfdParentPid(int pidfd, pid_t pid);

}  // namespace zygo::base::sys

#endif  // ZYGO_CORE_BASE_SYS_FS_H_
