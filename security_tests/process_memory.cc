// Another process's memory, environment and ancestry, read through /proc from the host.
#include "security_tests/process_memory.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <string_view>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/base/errno_status.h"
#include "core/base/sys/fs.h"
#include "core/base/unique_fd.h"

namespace zygo::testing {
namespace {

// Whether `window` holds any of `needles`.
bool HoldsAny(std::string_view window, const std::vector<std::string>& needles) {
  return std::any_of(needles.begin(), needles.end(), [window](const std::string& needle) {
    return window.find(needle) != std::string_view::npos;
  });
}

}  // namespace

absl::StatusOr<bool> MemoryContainsAny(pid_t pid, const std::vector<std::string>& needles) {
  size_t longest = 0;
  for (const std::string& needle : needles) longest = std::max(longest, needle.size());
  if (needles.empty() || std::any_of(needles.begin(), needles.end(),
                                     [](const std::string& needle) { return needle.empty(); })) {
    return absl::InvalidArgumentError("MemoryContainsAny needs needles, none empty");
  }
  const std::string base = absl::StrCat("/proc/", pid);
  absl::StatusOr<std::string> maps = base::sys::ReadFile(base + "/maps");
  if (!maps.ok()) return maps.status();
  base::UniqueFd mem(open((base + "/mem").c_str(), O_RDONLY | O_CLOEXEC));
  if (!mem.valid()) return base::ErrnoStatus(errno, absl::StrCat("open(", base, "/mem)"));
  // Bounded: a runtime's reserved address space can be gigabytes. Each chunk is searched
  // behind the last longest - 1 bytes of the one before it, so a needle across a chunk
  // boundary is found too.
  const size_t overlap = longest - 1;
  std::vector<char> buffer(overlap + kMemoryChunkBytes);
  std::istringstream lines(*maps);
  std::string line;
  size_t read_bytes = 0;
  while (std::getline(lines, line)) {
    unsigned long start = 0, end = 0;
    char perms[5] = {};
    if (sscanf(line.c_str(), "%lx-%lx %4s", &start, &end, perms) != 3 || perms[0] != 'r') continue;
    if (line.find("[vvar") != std::string::npos) continue;
    size_t kept = 0;  // bytes of the previous chunk at the buffer's start
    for (unsigned long at = start; at < end;) {
      const size_t want = std::min<size_t>(kMemoryChunkBytes, end - at);
      const ssize_t n = pread(mem.get(), buffer.data() + kept, want, static_cast<off_t>(at));
      if (n <= 0) break;  // the rest of this mapping cannot be read
      read_bytes += static_cast<size_t>(n);
      const size_t filled = kept + static_cast<size_t>(n);
      if (HoldsAny(std::string_view(buffer.data(), filled), needles)) return true;
      if (static_cast<size_t>(n) < want) break;
      kept = std::min(overlap, filled);
      std::memmove(buffer.data(), buffer.data() + filled - kept, kept);
      at += static_cast<unsigned long>(n);
    }
  }
  if (read_bytes == 0) return absl::PermissionDeniedError(absl::StrCat("read nothing of ", base));
  return false;
}

absl::StatusOr<bool> MemoryContains(pid_t pid, const std::string& needle) {
  return MemoryContainsAny(pid, {needle});
}

absl::StatusOr<bool> EnvironmentContains(pid_t pid, const std::string& needle) {
  absl::StatusOr<std::string> environ =
      base::sys::ReadFile(absl::StrCat("/proc/", pid, "/environ"));
  if (!environ.ok()) return environ.status();
  return environ->find(needle) != std::string::npos;
}

std::string Argv0(pid_t pid) {
  absl::StatusOr<std::string> cmdline =
      base::sys::ReadFile(absl::StrCat("/proc/", pid, "/cmdline"));
  if (!cmdline.ok()) return "";
  return std::string(cmdline->c_str());
}

ProcessParents ReadProcessParents() {
  ProcessParents parents;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    int pid = 0;
    if (!absl::SimpleAtoi(entry.path().filename().string(), &pid)) continue;
    parents[pid] = base::sys::ReadParentPid(pid).value_or(-1);
  }
  return parents;
}

std::vector<pid_t> DescendantsIn(const ProcessParents& parents, pid_t root) {
  std::vector<pid_t> found;
  for (const auto& [pid, parent] : parents) {
    for (pid_t up = parent; up > 1;) {
      if (up == root) {
        found.push_back(pid);
        break;
      }
      auto above = parents.find(up);
      up = above == parents.end() ? -1 : above->second;
    }
  }
  return found;
}

std::vector<pid_t> Descendants(pid_t root) { return DescendantsIn(ReadProcessParents(), root); }

}  // namespace zygo::testing
