#include "images/internal/keyed_entries.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "core/base/sys/fs.h"
#include "core/base/sys/remove_tree.h"

namespace zygo::images {

absl::StatusOr<base::UniqueFd> LockEntry(const std::string& kind_dir, const std::string& hex) {
  for (const std::string& dir : {kind_dir, kind_dir + "/sha256", kind_dir + "/locks"}) {
    absl::Status made = base::sys::MakeDirectory(dir, 0755);
    if (!made.ok() && base::sys::ErrnoOf(made) != EEXIST) return made;
  }
  const std::string path = absl::StrCat(kind_dir, "/locks/", hex);
  int fd =
      base::RetryOnEintr([&] { return ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600); });
  if (fd < 0) return base::ErrnoStatus(errno, absl::StrCat("open(", path, ")"));
  base::UniqueFd lock(fd);
  if (base::RetryOnEintr([&] { return ::flock(lock.get(), LOCK_EX); }) != 0) {
    return base::ErrnoStatus(errno, absl::StrCat("flock(", path, ", LOCK_EX)"));
  }
  return lock;
}

absl::StatusOr<int64_t> PruneOwnedEntries(const std::string& kind_dir,
                                          const std::string& owner_file,
                                          const std::set<std::string>& live_manifests) {
  namespace fs = std::filesystem;
  const fs::path entries = fs::path(kind_dir) / "sha256";
  std::error_code ec;
  if (!fs::exists(entries, ec)) return 0;
  int64_t freed = 0;
  for (const auto& entry : fs::directory_iterator(entries, ec)) {
    std::string owner;
    absl::StatusOr<std::string> text = base::sys::ReadFile((entry.path() / owner_file).string());
    if (text.ok()) owner = std::string(absl::StripAsciiWhitespace(*text));
    if (live_manifests.count(owner)) continue;
    for (const auto& file : fs::recursive_directory_iterator(entry.path(), ec)) {
      if (file.is_regular_file(ec) && !file.is_symlink(ec)) {
        freed += static_cast<int64_t>(file.file_size(ec));
      }
    }
    ZYGO_RETURN_IF_ERROR(base::sys::RemoveTree(entry.path().string()));
  }
  return freed;
}

}  // namespace zygo::images
