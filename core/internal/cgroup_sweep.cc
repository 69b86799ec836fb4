#include "core/internal/cgroup_sweep.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <unistd.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace zygo::core::internal {

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
    rmdir(absl::StrCat(parent_dir, "/", name).c_str());
  }
  closedir(dir);
}

}  // namespace zygo::core::internal
