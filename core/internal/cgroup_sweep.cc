#include "core/internal/cgroup_sweep.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <unistd.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace zygo::core::internal {
namespace {

// rmdir of a cgroup and, first, of the cgroups nested in it (a supervisor's per-request
// ones). A cgroup directory holds only the kernel's files and its children, so the
// subdirectories are exactly the nested cgroups; a cgroup with members stays.
void RemoveCgroupTree(const std::string& path, int depth) {
  if (depth > 8) return;
  if (DIR* dir = opendir(path.c_str())) {
    while (struct dirent* entry = readdir(dir)) {
      absl::string_view name = entry->d_name;
      if (entry->d_type != DT_DIR || name == "." || name == "..") continue;
      RemoveCgroupTree(absl::StrCat(path, "/", name), depth + 1);
    }
    closedir(dir);
  }
  rmdir(path.c_str());
}

}  // namespace

void SweepStaleCgroups(const std::string& parent_dir, const std::string& prefix) {
  DIR* dir = opendir(parent_dir.c_str());
  if (dir == nullptr) return;
  while (struct dirent* entry = readdir(dir)) {
    absl::string_view name = entry->d_name;
    if (entry->d_type != DT_DIR || name.substr(0, prefix.size()) != prefix) continue;
    absl::string_view rest = name.substr(prefix.size());
    size_t dash = rest.find('-');
    int pid = 0;
    if (dash == absl::string_view::npos || !absl::SimpleAtoi(rest.substr(0, dash), &pid) ||
        pid <= 0 || pid == getpid()) {
      continue;
    }
    // A live process with that pid (the owner, or an unrelated reuse): leave it.
    if (kill(pid, 0) == 0 || errno != ESRCH) continue;
    RemoveCgroupTree(absl::StrCat(parent_dir, "/", name), 0);
  }
  closedir(dir);
}

}  // namespace zygo::core::internal
