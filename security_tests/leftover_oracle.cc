// Process trees, network namespaces and cgroups as /proc and /sys/fs/cgroup show them.
#include "security_tests/leftover_oracle.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "testing/harness.h"

namespace zygo::testing {
namespace {

std::string ReadFile(const std::string& path) { return ReadProcFile(path); }

std::string ReadLink(const std::filesystem::path& path) {
  std::error_code ec;
  std::filesystem::path target = std::filesystem::read_symlink(path, ec);
  return ec ? "" : target.string();
}

std::vector<int> AllPids() {
  std::vector<int> pids;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") == std::string::npos)
      pids.push_back(atoi(name.c_str()));
  }
  return pids;
}

// Parent pid and start time from /proc/PID/stat; false when the process is gone.
bool ReadStat(int pid, int* parent, uint64_t* start) {
  const std::string stat = ReadFile(absl::StrCat("/proc/", pid, "/stat"));
  // The command name may hold spaces and parentheses; the fields follow its last ')'.
  const size_t comm_end = stat.rfind(')');
  if (comm_end == std::string::npos || comm_end + 2 > stat.size()) return false;
  std::istringstream fields(stat.substr(comm_end + 2));
  std::string field;
  for (int i = 0; i < 20 && fields >> field; ++i) {
    if (i == 1) *parent = atoi(field.c_str());                   // field 4, ppid
    if (i == 19) *start = strtoull(field.c_str(), nullptr, 10);  // field 22, starttime
  }
  return true;
}

std::string Cmdline(int pid) {
  std::string text = ReadFile(absl::StrCat("/proc/", pid, "/cmdline"));
  for (char& c : text) c = c == '\0' ? ' ' : c;
  return text;
}

}  // namespace

TreeSnapshot TreeSnapshot::Take(int root, const std::string& marker) {
  std::set<int> members = {root};
  for (int pid : ProcessesMatching(marker)) members.insert(pid);
  // Parents come before children in no particular order: sweep until nothing joins.
  bool grew = true;
  while (grew) {
    grew = false;
    for (int pid : AllPids()) {
      int parent = 0;
      uint64_t start = 0;
      if (members.count(pid) == 0 && ReadStat(pid, &parent, &start) && members.count(parent)) {
        grew = members.insert(pid).second || grew;
      }
    }
  }
  TreeSnapshot snapshot;
  for (int pid : members) {
    Process process;
    process.pid = pid;
    int parent = 0;
    if (!ReadStat(pid, &parent, &process.start)) continue;
    process.command = Cmdline(pid);
    process.netns = NetnsOf(pid);
    snapshot.processes_.push_back(process);
  }
  return snapshot;
}

std::vector<std::string> TreeSnapshot::Commands() const {
  std::vector<std::string> commands;
  for (const Process& process : processes_) {
    commands.push_back(absl::StrCat(process.pid, " ", process.command));
  }
  return commands;
}

std::set<std::string> TreeSnapshot::NetnsExcept(const std::string& except) const {
  std::set<std::string> found;
  for (const Process& process : processes_) {
    if (!process.netns.empty() && process.netns != except) found.insert(process.netns);
  }
  return found;
}

std::vector<std::string> TreeSnapshot::StillRunning() const {
  std::vector<std::string> running;
  for (const Process& process : processes_) {
    int parent = 0;
    uint64_t start = 0;
    if (ReadStat(process.pid, &parent, &start) && start == process.start) {
      running.push_back(absl::StrCat(process.pid, " ", process.command));
    }
  }
  return running;
}

std::string NetnsOf(int pid) { return ReadLink(absl::StrCat("/proc/", pid, "/ns/net")); }

std::vector<std::string> NetnsHolders(const std::string& netns) {
  std::vector<std::string> holders;
  for (int pid : AllPids()) {
    const std::filesystem::path proc = absl::StrCat("/proc/", pid);
    std::error_code ec;
    for (const auto& task : std::filesystem::directory_iterator(proc / "task", ec)) {
      if (ReadLink(task.path() / "ns" / "net") == netns) holders.push_back(task.path());
    }
    for (const auto& fd : std::filesystem::directory_iterator(proc / "fd", ec)) {
      if (ReadLink(fd.path()) == netns) holders.push_back(fd.path());
    }
  }
  // A bind mount of the namespace file shows "net:[INODE]" as the mount's root.
  std::istringstream mountinfo(ReadFile("/proc/self/mountinfo"));
  for (std::string line; std::getline(mountinfo, line);) {
    if (absl::StrContains(line, netns)) holders.push_back(line);
  }
  return holders;
}

std::vector<std::string> CgroupsNamed(const std::string& prefix, const std::string& root) {
  std::vector<std::string> found;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(
           root, std::filesystem::directory_options::skip_permission_denied, ec);
       it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    if (it.depth() > 6) it.disable_recursion_pending();
    if (it->is_directory(ec) && absl::StartsWith(it->path().filename().string(), prefix)) {
      found.push_back(it->path());
    }
  }
  return found;
}

}  // namespace zygo::testing
