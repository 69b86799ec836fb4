#include "bench/common/scratch_dir.h"

#include <errno.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/statfs.h>

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/base/errno_status.h"
#include "core/base/sys/fs.h"
#include "core/base/sys/remove_tree.h"

namespace zygo::bench {
absl::StatusOr<ScratchDir> ScratchDir::Create(const std::string& prefix) {
  const char* tmp = getenv("TMPDIR");
  std::string pattern =
      absl::StrCat(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", "/", prefix, ".XXXXXX");
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (mkdtemp(buffer.data()) == nullptr) {
    return base::ErrnoStatus(errno, absl::StrCat("mkdtemp(", pattern, ")"));
  }
  return ScratchDir(std::string(buffer.data()));
}

ScratchDir::~ScratchDir() {
  if (path_.empty()) return;
  absl::Status removed = base::sys::RemoveTree(path_);
  if (!removed.ok()) {
    fprintf(stderr, "zygo bench: could not remove %s: %s\n", path_.c_str(),
            std::string(removed.message()).c_str());
  }
}

std::string FileSystemName(const std::string& path) {
  absl::StatusOr<struct statfs> st = base::sys::StatFs(path);
  if (!st.ok()) return "unknown";
  switch (static_cast<unsigned long>(st->f_type)) {
    case EXT4_SUPER_MAGIC:  // ext2, ext3 and ext4 share it
      return "ext4";
    case TMPFS_MAGIC:
      return "tmpfs";
    case XFS_SUPER_MAGIC:
      return "xfs";
    case BTRFS_SUPER_MAGIC:
      return "btrfs";
    case OVERLAYFS_SUPER_MAGIC:
      return "overlay";
  }
  return absl::StrFormat("0x%lx", static_cast<unsigned long>(st->f_type));
}

}  // namespace zygo::bench
