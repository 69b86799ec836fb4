// Replacing a file whole: a reader sees the old bytes or the new ones, never a part, and a
// crash never leaves the name promising bytes the disk did not get.
#ifndef ZYGO_CORE_BASE_SYS_ATOMIC_WRITE_H_
#define ZYGO_CORE_BASE_SYS_ATOMIC_WRITE_H_

#include <sys/types.h>

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace zygo::base::sys {

struct AtomicWriteOptions {
  mode_t mode = 0644;  // of the new file (the umask still applies)
  // Where the bytes are written first; empty: beside `path` as PATH.tmp.<pid>.<random>.
  // It must be on the same filesystem as `path`.
  std::string temp_path;
  // Also fsync the directory holding `path`, so the rename itself survives a crash.
  bool sync_directory = false;
};

// Writes `bytes` to a new temp file (O_EXCL, never through a symlink), fsyncs it and
// renames it over `path`. The temp file is gone on every failure.
absl::Status WriteFileAtomically(const std::string& path, absl::string_view bytes,
                                 const AtomicWriteOptions& options = {});

}  // namespace zygo::base::sys

#endif  // ZYGO_CORE_BASE_SYS_ATOMIC_WRITE_H_
