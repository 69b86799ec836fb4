// Walking /proc for a process's descendants, and reading their PSS.
#include "bench/common/process_tree.h"

#include <errno.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "core/base/errno_status.h"

namespace zygo::bench {
namespace {

// The ppid field of /proc/PID/stat, or -1. The command name (field 2) is in parentheses
// and may itself hold spaces and ')', so fields are counted from the last ')'.
pid_t ParentOf(const std::string& pid_dir) {
  std::ifstream file(pid_dir + "/stat");
  std::string stat;
  if (!std::getline(file, stat)) return -1;
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(stat.substr(close + 1));
  std::string state;
  pid_t ppid = -1;
  rest >> state >> ppid;
  return rest ? ppid : -1;
}

// utime + stime, plus cutime + cstime with `children` (fields 14-17 of /proc/PID/stat),
// in clock ticks, or -1.
long long CpuTicks(pid_t pid, bool children = true) {
  std::ifstream file(absl::StrCat("/proc/", pid, "/stat"));
  std::string stat;
  if (!std::getline(file, stat)) return -1;
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(stat.substr(close + 1));
  std::string skip;
  for (int field = 3; field <= 13; ++field) rest >> skip;
  long long utime = 0, stime = 0, cutime = 0, cstime = 0;
  rest >> utime >> stime >> cutime >> cstime;
  if (!rest) return -1;
  return children ? utime + stime + cutime + cstime : utime + stime;
}

}  // namespace

std::vector<pid_t> Descendants(pid_t root) {
  std::multimap<pid_t, pid_t> children;  // parent -> child
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    pid_t pid = 0;
    if (!absl::SimpleAtoi(entry.path().filename().string(), &pid)) continue;
    const pid_t parent = ParentOf(entry.path().string());
    if (parent > 0) children.emplace(parent, pid);
  }
  std::vector<pid_t> found;
  std::vector<pid_t> pending = {root};
  while (!pending.empty()) {
    const pid_t parent = pending.back();
    pending.pop_back();
    auto [begin, end] = children.equal_range(parent);
    for (auto it = begin; it != end; ++it) {
      found.push_back(it->second);
      pending.push_back(it->second);
    }
  }
  std::sort(found.begin(), found.end());
  return found;
}

std::optional<double> TreeCpuSeconds(pid_t root) {
  const long long root_ticks = CpuTicks(root);
  if (root_ticks < 0) return std::nullopt;
  long long ticks = root_ticks;
  for (pid_t pid : Descendants(root)) ticks += std::max(0LL, CpuTicks(pid));
  return static_cast<double>(ticks) / sysconf(_SC_CLK_TCK);
}

std::optional<double> ProcessCpuSeconds(pid_t pid) {
  const long long ticks = CpuTicks(pid, /*children=*/false);
  if (ticks < 0) return std::nullopt;
  return static_cast<double>(ticks) / sysconf(_SC_CLK_TCK);
}

absl::StatusOr<Pss> ReadPss(pid_t pid) {
  const std::string path = absl::StrCat("/proc/", pid, "/smaps_rollup");
  std::ifstream file(path);
  if (!file) {
    const int err = errno;
    if (err == ENOENT || err == ESRCH) return absl::NotFoundError(absl::StrCat(pid, " is gone"));
    return base::ErrnoStatus(err, absl::StrCat("open(", path, ")"));
  }
  Pss pss;
  bool found = false;
  std::string line;
  while (std::getline(file, line)) {
    absl::string_view view(line);
    int64_t* field = nullptr;
    if (absl::ConsumePrefix(&view, "Pss:")) {
      field = &pss.kb;
      found = true;
    } else if (absl::ConsumePrefix(&view, "Pss_Anon:")) {
      field = &pss.anon_kb;
    } else if (absl::ConsumePrefix(&view, "Pss_File:")) {
      field = &pss.file_kb;
    } else {
      continue;
    }
    view = absl::StripAsciiWhitespace(absl::StripSuffix(absl::StripAsciiWhitespace(view), "kB"));
    if (!absl::SimpleAtoi(view, field)) {
      return absl::InternalError(absl::StrCat(path, ": unreadable line '", line, "'"));
    }
  }
  // An exited process's smaps_rollup opens but reads empty.
  if (!found)
    return absl::NotFoundError(absl::StrCat(path, " has no Pss line (the process exited?)"));
  return pss;
}

absl::StatusOr<PssTotal> SumPss(const std::vector<pid_t>& pids) {
  PssTotal total;
  for (pid_t pid : pids) {
    absl::StatusOr<Pss> pss = ReadPss(pid);
    if (pss.ok()) {
      total.sum.kb += pss->kb;
      total.sum.anon_kb += pss->anon_kb;
      total.sum.file_kb += pss->file_kb;
      ++total.processes;
    } else if (absl::IsNotFound(pss.status())) {
      ++total.vanished;
    } else {
      return pss.status();
    }
  }
  return total;
}

}  // namespace zygo::bench
