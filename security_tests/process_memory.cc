#include "security_tests/process_memory.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string_view>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/base/errno_status.h"
#include "core/base/unique_fd.h"

namespace zygo::testing {
namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

pid_t ParentOf(pid_t pid) {
  absl::StatusOr<std::string> stat = ReadFile(absl::StrCat("/proc/", pid, "/stat"));
  if (!stat.ok()) return -1;
  // "PID (COMM) STATE PPID ...": COMM may hold spaces and parentheses; the last ')' ends it.
  size_t close = stat->rfind(')');
  if (close == std::string::npos) return -1;
  int ppid = -1;
  if (sscanf(stat->c_str() + close + 1, " %*c %d", &ppid) != 1) return -1;
  return ppid;
}

}  // namespace

absl::StatusOr<bool> MemoryContains(pid_t pid, const std::string& needle) {
  std::string base = absl::StrCat("/proc/", pid);
  absl::StatusOr<std::string> maps = ReadFile(base + "/maps");
  if (!maps.ok()) return maps.status();
  base::UniqueFd mem(open((base + "/mem").c_str(), O_RDONLY | O_CLOEXEC));
  if (!mem.valid()) return base::ErrnoStatus(errno, absl::StrCat("open(", base, "/mem)"));
  std::istringstream lines(*maps);
  std::string line;
  size_t read_bytes = 0;
  while (std::getline(lines, line)) {
    unsigned long start = 0, end = 0;
    char perms[5] = {};
    if (sscanf(line.c_str(), "%lx-%lx %4s", &start, &end, perms) != 3 || perms[0] != 'r') continue;
    if (line.find("[vvar") != std::string::npos) continue;
    std::string buffer(end - start, '\0');
    ssize_t n = pread(mem.get(), buffer.data(), buffer.size(), static_cast<off_t>(start));
    if (n <= 0) continue;
    read_bytes += static_cast<size_t>(n);
    if (std::string_view(buffer.data(), static_cast<size_t>(n)).find(needle) !=
        std::string_view::npos) {
      return true;
    }
  }
  if (read_bytes == 0) return absl::PermissionDeniedError(absl::StrCat("read nothing of ", base));
  return false;
}

absl::StatusOr<bool> EnvironmentContains(pid_t pid, const std::string& needle) {
  absl::StatusOr<std::string> environ = ReadFile(absl::StrCat("/proc/", pid, "/environ"));
  if (!environ.ok()) return environ.status();
  return environ->find(needle) != std::string::npos;
}

std::string Argv0(pid_t pid) {
  absl::StatusOr<std::string> cmdline = ReadFile(absl::StrCat("/proc/", pid, "/cmdline"));
  if (!cmdline.ok()) return "";
  return std::string(cmdline->c_str());
}

std::vector<pid_t> Descendants(pid_t root) {
  std::map<pid_t, pid_t> parents;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    int pid = 0;
    if (!absl::SimpleAtoi(entry.path().filename().string(), &pid)) continue;
    parents[pid] = ParentOf(pid);
  }
  std::vector<pid_t> found;
  for (const auto& [pid, parent] : parents) {
    for (pid_t up = parent; up > 1; up = parents.count(up) ? parents[up] : -1) {
      if (up == root) {
        found.push_back(pid);
        break;
      }
    }
  }
  return found;
}

}  // namespace zygo::testing
