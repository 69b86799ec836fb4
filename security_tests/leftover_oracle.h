// What a process tree (a supervisor and everything it started) looked like while it ran,
// so that once it is stopped a test can ask what is left of it: processes, network
// namespaces, cgroups. Test-only; reads /proc and /sys/fs/cgroup.
#ifndef ZYGO_SECURITY_TESTS_LEFTOVER_ORACLE_H_
#define ZYGO_SECURITY_TESTS_LEFTOVER_ORACLE_H_

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace zygo::testing {

class TreeSnapshot {
 public:
  // `root` and its descendants, plus every process whose command line or environment
  // contains `marker` (daemons that left the tree), each with its network namespace.
  static TreeSnapshot Take(int root, const std::string& marker);

  // "PID COMMAND LINE" of each process recorded.
  std::vector<std::string> Commands() const;
  // The network namespaces ("net:[INODE]") the processes were in, except `except`.
  std::set<std::string> NetnsExcept(const std::string& except) const;
  // Processes recorded that still run ("PID COMMAND LINE"). A reused pid is told apart by
  // its start time.
  std::vector<std::string> StillRunning() const;

 private:
  struct Process {
    int pid = 0;
    uint64_t start = 0;  // /proc/PID/stat field 22
    std::string command;
    std::string netns;
  };
  std::vector<Process> processes_;
};

// "net:[INODE]" of /proc/PID/ns/net, or "" when PID is gone.
std::string NetnsOf(int pid);

// Where `netns` ("net:[INODE]") is still referenced: a task's namespace, an open fd or a
// mount in this mount namespace. Empty once the namespace can be gone.
std::vector<std::string> NetnsHolders(const std::string& netns);

// Cgroup directories named `prefix`* anywhere under `root` (by default /sys/fs/cgroup: both
// v1 hierarchies and v2), at any depth the harness's LeftoverCgroups looks.
std::vector<std::string> CgroupsNamed(const std::string& prefix,
                                      const std::string& root = "/sys/fs/cgroup");

}  // namespace zygo::testing

#endif  // ZYGO_SECURITY_TESTS_LEFTOVER_ORACLE_H_
