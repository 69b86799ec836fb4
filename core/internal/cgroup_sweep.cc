// Stale cgroups: found by name (Zygo's "<prefix><pid>-<n>", its pid gone), judged whole
// (every nested cgroup named by the same zygo, no process anywhere in it), removed
// deepest first.
#include "core/internal/cgroup_sweep.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/base/sys/fs.h"
#include "core/internal/cgroup_fs.h"

namespace zygo::core::internal {
namespace {

namespace sys = ::zygo::base::sys;

constexpr int kMaxWalkDepth = 16;   // systemd's trees are a handful of levels deep
constexpr int kMaxNestedDepth = 4;  // the supervisor nests one level
constexpr size_t kMaxWalkedDirs = 100'000;
constexpr auto kMemberPoll = std::chrono::milliseconds(20);

bool AllDigits(absl::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), absl::ascii_isdigit);
}

// "<word>-<owner>-<n>", a cgroup the zygo `owner` nested in one of its own.
bool IsNestedName(absl::string_view name, pid_t owner) {
  const size_t dash = name.find('-');
  if (dash == absl::string_view::npos || dash == 0) return false;
  const absl::string_view word = name.substr(0, dash + 1);
  if (!std::all_of(word.begin(), word.end() - 1, absl::ascii_islower)) return false;
  return ZygoCgroupOwner(name, word) == owner;
}

// Answers for this process's pid namespace only (kill(2)); see ChildPidNamespace.
bool IsAlive(pid_t pid) { return kill(pid, 0) == 0 || errno != ESRCH; }

// PROC_PID_INIT_INO (include/linux/proc_ns.h): the initial pid namespace's inode, fixed
// since Linux 3.8.
constexpr ino_t kInitialPidNamespace = 0xEFFFFFFC;

// Why a cgroup's owner pid cannot be judged from here, or "" when it can. From a child pid
// namespace (a container that shares the host's cgroup tree) kill(2) knows no zygo outside
// it, so each of them looks dead. NSpid lists a pid per namespace from /proc's own inwards;
// a container that mounted its own /proc shows one, so the namespace's inode is asked too.
std::string ChildPidNamespace() {
  std::string seen;
  absl::StatusOr<std::string> read = sys::ReadFile("/proc/self/status");
  const std::string status = read.ok() ? *std::move(read) : "";
  for (absl::string_view line : absl::StrSplit(status, '\n')) {
    if (!absl::ConsumePrefix(&line, "NSpid:")) continue;
    std::vector<absl::string_view> pids =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (pids.size() > 1) seen = absl::StrCat("NSpid ", absl::StrJoin(pids, " "));
  }
  absl::StatusOr<struct stat> ns = sys::Stat("/proc/self/ns/pid");
  if (seen.empty() && ns.ok() && ns->st_ino != kInitialPidNamespace) {
    seen = absl::StrCat("pid:[", ns->st_ino, "]");
  }
  if (seen.empty()) return "";
  return absl::StrCat("this process is in a child pid namespace (", seen,
                      "), where a zygo outside it looks dead while it runs; remove them from "
                      "the host's pid namespace");
}

// One directory of a stale cgroup: itself and the cgroups nested in it, deepest first
// (so itself last).
struct StaleDir {
  std::vector<std::string> tree;
  std::vector<std::string> nested_names;
};

// Fills `found` with `dir` and the cgroups `owner` nested in it; `foreign` gets the first
// subdirectory that is none of them, when it has none yet.
void ListNested(const std::string& dir, pid_t owner, int depth, StaleDir* found,
                std::string* foreign) {
  for (const std::string& name : Subdirectories(dir)) {
    const std::string path = absl::StrCat(dir, "/", name);
    if (!IsNestedName(name, owner) || depth >= kMaxNestedDepth) {
      if (foreign->empty()) *foreign = path;
      continue;
    }
    found->nested_names.push_back(name);
    ListNested(path, owner, depth + 1, found, foreign);
  }
  found->tree.push_back(dir);
}

struct Group {
  StaleCgroup cgroup;
  std::vector<StaleDir> dirs;
  std::string foreign;  // the first directory in it that is no cgroup of its owner's, or ""
};

// Looks through `dir`'s children (and with `walk` their subtrees) for stale cgroups. A
// Zygo-named directory is never walked into: its contents are judged with it.
void Scan(const std::string& dir, const std::string& prefix, bool walk, int depth, size_t* budget,
          std::map<std::string, Group>* groups) {
  for (const std::string& name : Subdirectories(dir)) {
    if (*budget == 0) return;
    --*budget;
    const std::string path = absl::StrCat(dir, "/", name);
    const std::optional<pid_t> owner = ZygoCgroupOwner(name, prefix);
    if (!owner.has_value()) {
      if (walk && depth < kMaxWalkDepth) Scan(path, prefix, walk, depth + 1, budget, groups);
      continue;
    }
    if (IsAlive(*owner)) continue;  // this process's own too
    Group& group = (*groups)[name];
    group.cgroup.name = name;
    group.cgroup.owner = *owner;
    group.cgroup.dirs.push_back(path);
    StaleDir found;
    ListNested(path, *owner, 0, &found, &group.foreign);
    group.dirs.push_back(std::move(found));
  }
}

// The first directory of the group that has processes, or "". v2: its top directory's
// cgroup.events, whose "populated" counts the whole subtree (in any pid namespace). v1 has
// no such file: each directory's own cgroup.procs.
std::string BusyDir(const Group& group, CgroupVersion version) {
  for (const StaleDir& dir : group.dirs) {
    if (version == CgroupVersion::kV2) {
      const std::string& top = dir.tree.back();
      absl::StatusOr<std::string> events = sys::ReadFile(absl::StrCat(top, "/cgroup.events"));
      if (events.ok() && absl::StrContains(*events, "populated 1")) return top;
      continue;
    }
    for (const std::string& path : dir.tree) {
      absl::StatusOr<std::string> procs = sys::ReadFile(absl::StrCat(path, "/cgroup.procs"));
      if (procs.ok() && !absl::StripAsciiWhitespace(*procs).empty()) return path;
    }
  }
  return "";
}

// Waits until no group that could be removed has processes, or the deadline.
void WaitForMembers(const std::map<std::string, Group>& groups, CgroupVersion version,
                    absl::Duration wait) {
  const auto deadline = std::chrono::steady_clock::now() + absl::ToChronoNanoseconds(wait);
  for (;;) {
    bool busy = false;
    for (const auto& [name, group] : groups) {
      busy = busy || (group.foreign.empty() && !BusyDir(group, version).empty());
    }
    if (!busy || std::chrono::steady_clock::now() >= deadline) return;
    std::this_thread::sleep_for(kMemberPoll);
  }
}

// Deepest first; the first failure keeps the rest (a parent cannot go before its children).
void Remove(Group* group, CgroupVersion version) {
  if (!group->foreign.empty()) {
    group->cgroup.kept_because =
        absl::StrCat("it holds ", group->foreign, ", which Zygo did not name");
    return;
  }
  if (std::string busy = BusyDir(*group, version); !busy.empty()) {
    group->cgroup.kept_because = absl::StrCat("processes are still in ", busy);
    return;
  }
  for (const StaleDir& dir : group->dirs) {
    for (const std::string& path : dir.tree) {
      absl::Status removed = RemoveCgroupDir(path, "processes");
      if (!removed.ok()) {
        group->cgroup.kept_because = std::string(removed.message());
        return;
      }
    }
  }
  group->cgroup.removed = true;
}

std::string Resolved(const std::string& path) {
  char resolved[PATH_MAX];
  return ::realpath(path.c_str(), resolved) != nullptr ? std::string(resolved) : path;
}

}  // namespace

std::optional<pid_t> ZygoCgroupOwner(absl::string_view name, absl::string_view prefix) {
  if (!absl::ConsumePrefix(&name, prefix)) return std::nullopt;
  const size_t dash = name.find('-');
  if (dash == absl::string_view::npos || !AllDigits(name.substr(dash + 1))) return std::nullopt;
  int pid = 0;
  if (!AllDigits(name.substr(0, dash)) || !absl::SimpleAtoi(name.substr(0, dash), &pid) ||
      pid <= 0) {
    return std::nullopt;
  }
  return static_cast<pid_t>(pid);
}

std::vector<StaleCgroup> SweepStaleCgroups(CgroupVersion version,
                                           const std::vector<SweepHierarchy>& hierarchies,
                                           const std::string& prefix,
                                           const StaleSweepOptions& options) {
  std::set<std::string> seen;
  std::map<std::string, Group> groups;
  size_t budget = kMaxWalkedDirs;
  for (const SweepHierarchy& hierarchy : hierarchies) {
    // Co-mounted controllers share one directory under two names (cpu -> cpu,cpuacct).
    const std::string start =
        Resolved(options.everywhere ? hierarchy.mount_dir : hierarchy.parent_dir);
    if (!seen.insert(start).second) continue;
    Scan(start, prefix, options.everywhere, 0, &budget, &groups);
  }
  // Found, but not removed: their owners may be alive.
  const std::string cannot_judge = options.remove ? ChildPidNamespace() : "";
  if (options.remove && cannot_judge.empty() && options.wait_for_members > absl::ZeroDuration()) {
    WaitForMembers(groups, version, options.wait_for_members);
  }
  std::vector<StaleCgroup> stale;
  for (auto& [name, group] : groups) {
    std::set<std::string> nested;
    for (const StaleDir& dir : group.dirs) {
      nested.insert(dir.nested_names.begin(), dir.nested_names.end());
    }
    group.cgroup.nested = static_cast<int>(nested.size());
    if (!cannot_judge.empty()) {
      group.cgroup.kept_because = cannot_judge;
    } else if (options.remove) {
      Remove(&group, version);
    }
    stale.push_back(std::move(group.cgroup));
  }
  return stale;
}

}  // namespace zygo::core::internal
