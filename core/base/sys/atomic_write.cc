#include "core/base/sys/atomic_write.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/random.h>
#include <unistd.h>

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "core/base/sys/fs.h"
#include "core/base/unique_fd.h"

namespace zygo::base::sys {
namespace {

std::string TempBeside(const std::string& path) {
  uint64_t random = 0;
  if (getrandom(&random, sizeof(random), GRND_NONBLOCK) != sizeof(random)) {
    random = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(&random));
  }
  return absl::StrFormat("%s.tmp.%d.%016x", path, getpid(), random);
}

absl::Status Fsync(int fd, const std::string& name) {
  if (RetryOnEintr([&] { return ::fsync(fd); }) == 0) return absl::OkStatus();
  return LastErrnoStatus([&] { return absl::StrCat("fsync(", name, ")"); });
}

absl::Status WriteAndRename(const std::string& temp, const std::string& path,
                            absl::string_view bytes, mode_t mode) {
  int raw = RetryOnEintr([&] {
    return ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  });
  if (raw < 0) {
    return LastErrnoStatus([&] { return absl::StrCat("open(", temp, ", O_CREAT|O_EXCL)"); });
  }
  UniqueFd fd(raw);
  ZYGO_RETURN_IF_ERROR(WriteAll(fd, bytes.data(), bytes.size(), temp));
  ZYGO_RETURN_IF_ERROR(Fsync(fd.get(), temp));
  fd.Reset();
  if (RetryOnEintr([&] { return ::rename(temp.c_str(), path.c_str()); }) != 0) {
    return LastErrnoStatus([&] { return absl::StrCat("rename(", temp, " -> ", path, ")"); });
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteFileAtomically(const std::string& path, absl::string_view bytes,
                                 const AtomicWriteOptions& options) {
  const std::string temp = options.temp_path.empty() ? TempBeside(path) : options.temp_path;
  absl::Status written = WriteAndRename(temp, path, bytes, options.mode);
  if (!written.ok()) {
    ::unlink(temp.c_str());
    return written;
  }
  if (!options.sync_directory) return absl::OkStatus();
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "."
                          : slash == 0               ? "/"
                                                     : path.substr(0, slash);
  ZYGO_ASSIGN_OR_RETURN(UniqueFd dir_fd, OpenDirectory(dir));
  return Fsync(dir_fd.get(), dir);
}

}  // namespace zygo::base::sys
