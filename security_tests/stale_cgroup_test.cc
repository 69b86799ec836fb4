// A supervisor killed with SIGKILL while its warm functions serve leaves their cgroups
// (the function's, the zygote's and the requests'). The next supervisor started in the
// same place removes them before it serves, and so does `zygo doctor --fix` after
// `zygo doctor` counted them; a cgroup beside them that Zygo did not name, and one named
// for a live process, are left. On cgroup v1 everything happens in a parent cgroup of the
// test's own (and doctor looks at the hierarchy through a cgroup namespace rooted there),
// so no other cgroup of this machine is looked at. On cgroup v2 only from the root cgroup
// (the v2 lane's guest), where the supervisors run beside the test, and doctor runs in a
// cgroup without delegation, where it could make none, and still counts and removes them.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "security_tests/leftover_oracle.h"
#include "security_tests/warm_suite.h"
#include "testing/harness.h"

namespace zygo::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// One v1 hierarchy Zygo uses, as mounted here, and this process's cgroup in it.
struct Hierarchy {
  std::string mount;        // /sys/fs/cgroup/memory
  std::string controllers;  // "memory", "cpu,cpuacct"
  std::string own_dir;      // the mount joined with this process's cgroup path
};

// The memory, pids, cpu and cpuacct hierarchies (v1), each once.
std::vector<Hierarchy> OwnHierarchies() {
  std::vector<std::pair<std::string, std::string>> own;  // controllers, path
  std::ifstream self("/proc/self/cgroup");
  for (std::string line; std::getline(self, line);) {
    std::vector<std::string> fields = absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (fields.size() == 3 && !fields[1].empty()) own.emplace_back(fields[1], fields[2]);
  }
  std::vector<Hierarchy> found;
  std::ifstream mountinfo("/proc/self/mountinfo");
  for (std::string line; std::getline(mountinfo, line);) {
    std::vector<std::string> sides = absl::StrSplit(line, " - ");
    if (sides.size() != 2) continue;
    std::vector<std::string> left = absl::StrSplit(sides[0], ' ');
    std::vector<std::string> right = absl::StrSplit(sides[1], ' ');
    if (left.size() < 5 || right.size() < 3 || right[0] != "cgroup" || left[3] != "/") continue;
    std::vector<std::string> controllers;
    for (absl::string_view option : absl::StrSplit(right[2], ',')) {
      for (const char* wanted : {"memory", "pids", "cpu", "cpuacct"}) {
        if (option == wanted) controllers.emplace_back(option);
      }
    }
    if (controllers.empty()) continue;
    const std::string joined = absl::StrJoin(controllers, ",");
    for (const auto& [listed, path] : own) {
      if (listed == joined) found.push_back({left[4], joined, left[4] + (path == "/" ? "" : path)});
    }
  }
  return found;
}

// This process's cgroup v2 path (the "0::" line of /proc/self/cgroup), or "" without one.
std::string OwnV2Cgroup() {
  std::ifstream self("/proc/self/cgroup");
  for (std::string line; std::getline(self, line);) {
    if (absl::StartsWith(line, "0::")) return line.substr(3);
  }
  return "";
}

// The cgroups the supervisor `pid` made below `parent`: its "zygo-PID-N" and every cgroup
// nested in them.
std::vector<std::string> CgroupsOf(pid_t pid, const std::string& parent) {
  std::vector<std::string> dirs;
  for (const std::string& top : CgroupsNamed(absl::StrCat("zygo-", pid, "-"), parent)) {
    dirs.push_back(top);
    for (const std::string& below : CgroupsNamed("", top)) dirs.push_back(below);
  }
  return dirs;
}

// rmdirs `dirs` deepest first, for as long as their processes take to go (up to 5 s).
void RemoveDeepestFirst(std::vector<std::string> dirs) {
  std::sort(dirs.rbegin(), dirs.rend());
  for (int i = 0; i < 100 && !dirs.empty(); ++i) {
    std::vector<std::string> left;
    for (const std::string& dir : dirs) {
      if (rmdir(dir.c_str()) != 0 && fs::exists(dir)) left.push_back(dir);
    }
    dirs = std::move(left);
    if (!dirs.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

// Waits (up to 10 s) until no process is left in any of `dirs`.
void WaitUntilEmpty(const std::vector<std::string>& dirs) {
  for (int i = 0; i < 200; ++i) {
    bool busy = false;
    for (const std::string& dir : dirs) {
      std::ifstream procs(dir + "/cgroup.procs");
      std::string pid;
      busy = busy || static_cast<bool>(procs >> pid);
    }
    if (!busy) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ADD_FAILURE() << "processes stayed in the killed supervisor's cgroups for 10 s";
}

std::vector<std::string> Existing(const std::vector<std::string>& dirs) {
  std::vector<std::string> existing;
  for (const std::string& dir : dirs) {
    if (fs::exists(dir)) existing.push_back(dir);
  }
  return existing;
}

class StaleCgroupTest : public WarmSuite {
 protected:
  void SetUp() override {
    WarmSuite::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    if (access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0) {
      SetUpV2();
    } else {
      SetUpV1();
    }
    if (IsSkipped() || HasFatalFailure()) return;
    for (const char* script : {"in-parent.sh", "doctor.sh"}) {
      ASSERT_EQ(chmod((dir_ + "/" + script).c_str(), 0755), 0);
    }
    WriteFile("code/handler.py", "def main(event):\n    return {'answer': 42}\n");
    // Controls beside what the supervisors make: a name Zygo does not give, and Zygo's
    // name for a live process (this one).
    controls_ = {absl::StrCat("not-zygo-", getpid()), absl::StrCat("zygo-", getpid(), "-424242")};
    for (const std::string& parent : parents_) {
      for (const std::string& control : controls_) {
        ASSERT_EQ(mkdir(absl::StrCat(parent, "/", control).c_str(), 0755), 0);
      }
    }
  }

  // The memory, pids and cpu hierarchies: a parent of the test's own in each.
  void SetUpV1() {
    hierarchies_ = OwnHierarchies();
    if (hierarchies_.size() < 3) GTEST_SKIP() << "no v1 memory, pids and cpu hierarchies";
    private_parents_ = true;
    const std::string name = absl::StrCat("stale-test-", getpid());
    std::string move_in;
    for (Hierarchy& h : hierarchies_) {
      parents_.push_back(absl::StrCat(h.own_dir, "/", name));
      ASSERT_EQ(mkdir(parents_.back().c_str(), 0755), 0) << parents_.back();
      absl::StrAppend(&move_in, "echo $$ > ", parents_.back(), "/cgroup.procs || exit 126\n");
    }
    // The supervisor runs in the private parent: it execs in place, so its pid (the one
    // its cgroups are named after) is the wrapper's.
    WriteFile("in-parent.sh", absl::StrCat("#!/bin/sh\n", move_in, "exec \"$@\"\n"));
    // doctor sees only the private parent: a cgroup namespace rooted there, with the
    // hierarchies mounted again inside it.
    std::string mounts = "mount -t tmpfs zygo-test /sys/fs/cgroup || exit 126\n";
    for (const Hierarchy& h : hierarchies_) {
      const std::string at = absl::StrCat("/sys/fs/cgroup/", fs::path(h.mount).filename().string());
      absl::StrAppend(&mounts, "mkdir ", at, " && mount -t cgroup -o ", h.controllers, " cgroup ",
                      at, " || exit 126\n");
    }
    WriteFile("doctor.sh", absl::StrCat("#!/bin/sh\n", move_in,
                                        "exec unshare --cgroup --mount --propagation private "
                                        "/bin/sh -c '",
                                        mounts, "exec \"$@\"' sh \"$@\"\n"));
  }

  // Only from the root cgroup, without a private parent: one would hold the supervisor's
  // process, and v2's no-internal-process rule then refuses it controllers for its
  // children. Elsewhere the supervisor's placement is issue 17.
  void SetUpV2() {
    const std::string own = OwnV2Cgroup();
    if (own != "/") {
      GTEST_SKIP() << "cgroup v2 from " << own
                   << ": a supervisor in a nested cgroup cannot enable controllers for its own "
                      "(the no-internal-process rule), issue 17; the v2 lane runs this from the "
                      "root cgroup";
    }
    // Only the real root has no cgroup.type; "/" of a cgroup namespace is a nested cgroup.
    if (access("/sys/fs/cgroup/cgroup.type", F_OK) == 0) {
      GTEST_SKIP() << "cgroup v2: this cgroup namespace's root is a nested cgroup (issue 17)";
    }
    parents_ = {"/sys/fs/cgroup"};
    WriteFile("in-parent.sh", "#!/bin/sh\nexec \"$@\"\n");
    // doctor runs alone in a leaf below a cgroup of the test's own, away from where the
    // supervisors made theirs: it counts them all the same (sweeping needs only the mount).
    doctor_dir_ = absl::StrCat("/sys/fs/cgroup/stale-doctor-", getpid());
    ASSERT_EQ(mkdir(doctor_dir_.c_str(), 0755), 0) << doctor_dir_;
    ASSERT_EQ(mkdir((doctor_dir_ + "/leaf").c_str(), 0755), 0) << doctor_dir_;
    WriteFile("doctor.sh", absl::StrCat("#!/bin/sh\necho $$ > ", doctor_dir_,
                                        "/leaf/cgroup.procs || exit 126\nexec \"$@\"\n"));
  }

  void TearDown() override {
    WarmSuite::TearDown();  // stops the supervisor; its sandboxes go with it
    for (const std::string& parent : parents_) {
      for (const std::string& control : controls_) {
        rmdir(absl::StrCat(parent, "/", control).c_str());
      }
      // What a failed test left: everything in a private parent, else what the
      // supervisors made.
      std::vector<std::string> left;
      if (private_parents_) {
        left = CgroupsNamed("", parent);
        left.push_back(parent);
      }
      for (pid_t pid : supervisors_) {
        std::vector<std::string> theirs = CgroupsOf(pid, parent);
        left.insert(left.end(), theirs.begin(), theirs.end());
      }
      RemoveDeepestFirst(left);
    }
    if (!doctor_dir_.empty()) RemoveDeepestFirst({doctor_dir_, doctor_dir_ + "/leaf"});
  }

  // A supervisor in the private parent, with `args` added to its flags.
  void StartInParent(const std::vector<std::string>& args = {}) {
    SupervisorProcess::Options options = SecurityTestSupervisor();
    options.wrapper = dir_ + "/in-parent.sh";
    options.args = args;
    StartSupervisor(options);
    if (supervisor_ != nullptr) supervisors_.push_back(supervisor_->pid());
  }

  // A supervisor in the private parent, serving a Python and a warm-exec function, each
  // having answered a request (so their request cgroups exist too).
  void StartServing() {
    StartInParent();
    if (HasFatalFailure()) return;
    EXPECT_TRUE(Up("py", "name = \"py\"\nentry = \"handler.py:main\"\n").ok());
    EXPECT_TRUE(Up("sh", "name = \"sh\"\nruntime = \"exec\"\nentry = [\"/bin/cat\"]\n").ok());
    for (const char* function : {"py", "sh"}) {
      absl::StatusOr<nlohmann::json> reply = supervisor_->Exec(function, {{"x", 1}});
      EXPECT_TRUE(reply.ok() && reply->value("ok", false))
          << function << ": " << (reply.ok() ? reply->dump() : reply.status().ToString())
          << supervisor_->Log();
    }
  }

  // Kills the supervisor with SIGKILL; the cgroups it left (listed once it is dead: while
  // it runs, request cgroups come and go).
  std::vector<std::string> KillSupervisor() {
    const pid_t pid = supervisor_->pid();
    supervisor_->Kill();
    std::vector<std::string> dirs;
    for (const std::string& parent : parents_) {
      std::vector<std::string> theirs = CgroupsOf(pid, parent);
      dirs.insert(dirs.end(), theirs.begin(), theirs.end());
    }
    return dirs;
  }

  void ExpectControlsLeft() {
    for (const std::string& parent : parents_) {
      for (const std::string& control : controls_) {
        EXPECT_TRUE(fs::exists(absl::StrCat(parent, "/", control))) << parent << "/" << control;
      }
    }
  }

  RunResult Doctor(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {dir_ + "/doctor.sh", ZygoPath(), "doctor"};
    argv.insert(argv.end(), args.begin(), args.end());
    RunOptions options;
    options.want_outcome = false;
    return RunOnHost(argv, options);
  }

  // Doctor can make cgroups where it runs, so it exits 0: on v1 below its own cgroups; on
  // v2 from doctor_dir_'s leaf, below its process-free parent (delegated_ancestor) until
  // an earlier doctor has turned the controllers on there, then in a leaf of its own
  // (leaf_of_own_cgroup), as a run there would.
  void ExpectDoctorExit(const RunResult& result) {
    EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
    EXPECT_THAT(result.out, HasSubstr("limits           ok")) << result.out;
  }

  std::vector<Hierarchy> hierarchies_;
  // Where the supervisors run and make their cgroups: one per v1 hierarchy, or v2's root.
  std::vector<std::string> parents_;
  bool private_parents_ = false;  // made by this test (v1), removed whole afterwards
  std::vector<std::string> controls_;
  std::vector<pid_t> supervisors_;  // every supervisor started, whose cgroups are removed
  std::string doctor_dir_;          // v2: where doctor runs, a cgroup without delegation
};

// Two functions and the runtime zygote their zygotes were forked from (the zygote tree):
// one cgroup each in every hierarchy, a function's with a zygote and request cgroups inside
// (in all but a cpuacct hierarchy of its own, which gets no nested ones).
void ExpectAKilledSupervisorsCgroups(const std::vector<std::string>& dirs, size_t hierarchies) {
  size_t tops = 0, zygotes = 0, requests = 0;
  for (const std::string& dir : dirs) {
    const std::string name = fs::path(dir).filename().string();
    tops += absl::StartsWith(name, "zygo-");
    zygotes += absl::StartsWith(name, "zygote-");
    requests += absl::StartsWith(name, "request-");
  }
  EXPECT_EQ(tops, 3 * hierarchies) << absl::StrJoin(dirs, "\n");
  EXPECT_GE(zygotes, 2u) << absl::StrJoin(dirs, "\n");
  EXPECT_GE(requests, 2u) << absl::StrJoin(dirs, "\n");
}

TEST_F(StaleCgroupTest, TheNextSupervisorRemovesAKilledOnesCgroups) {
  StartServing();
  if (IsSkipped() || HasFatalFailure()) return;
  const std::vector<std::string> killed = KillSupervisor();
  ExpectAKilledSupervisorsCgroups(killed, parents_.size());
  // What the bug was: nothing removes them.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ASSERT_EQ(Existing(killed), killed);

  // A supervisor with nothing to warm (a state dir of its own): making no cgroup of its
  // own, it still removes them before it serves.
  StartInParent({"--state-dir", dir_ + "/state-next"});
  if (HasFatalFailure()) return;
  EXPECT_THAT(Existing(killed), IsEmpty());
  EXPECT_THAT(supervisor_->Log(), HasSubstr("removed 3 stale cgroups of killed zygo processes"));
  ExpectControlsLeft();
}

TEST_F(StaleCgroupTest, DoctorCountsThemAndFixRemovesThem) {
  StartServing();
  if (IsSkipped() || HasFatalFailure()) return;
  const pid_t pid = supervisor_->pid();
  const std::vector<std::string> killed = KillSupervisor();
  ExpectAKilledSupervisorsCgroups(killed, parents_.size());
  // Its sandboxes die with it, a moment later (doctor would keep a cgroup with one left).
  WaitUntilEmpty(killed);

  RunResult counted = Doctor({});
  ExpectDoctorExit(counted);
  EXPECT_THAT(counted.out, HasSubstr(absl::StrCat("stale cgroups    ok   3 found, of killed zygo "
                                                  "processes: zygo-",
                                                  pid, "-")));
  EXPECT_THAT(counted.out, HasSubstr("(zygo doctor --fix removes them)"));
  EXPECT_EQ(Existing(killed), killed) << "plain doctor only counts";

  RunResult fixed = Doctor({"--fix"});
  ExpectDoctorExit(fixed);
  EXPECT_THAT(fixed.out, HasSubstr(absl::StrCat("stale cgroups    ok   3 removed: zygo-", pid)));
  EXPECT_THAT(Existing(killed), IsEmpty());
  ExpectControlsLeft();

  RunResult again = Doctor({});
  EXPECT_THAT(again.out, HasSubstr("stale cgroups    ok   none"));
}

}  // namespace
}  // namespace zygo::testing
