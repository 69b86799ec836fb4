// SealForkedZygote against real processes (core/internal/forked_zygote_fixture.h: a
// runtime sandbox of the test's own, whose forked child unshares as a runtime's agent does
// and forks Z, pid 1 of its own pid namespace). Z waits, the test seals it, and Z reports
// what it sees. As root, and as an ordinary user owning R; each refusal is beside a
// zygote of the same runtime that is sealed.
#include "core/forked_zygote.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "core/base/sys/process.h"
#include "core/base/unique_fd.h"
#include "core/internal/forked_zygote_fixture.h"
#include "core/mount_plan.h"

namespace zygo::core {
namespace {

using base::UniqueFd;
using testing::CodeDir;
using testing::ForkRequest;
using testing::Ids;
using testing::kCodeFile;
using testing::kCodeText;
using testing::kZygoteNamespaces;
using testing::List;
using testing::LoopbackUp;
using testing::ReadFile;
using testing::Runtime;
using testing::Zygote;
using testing::ZygoteBefore;

// ---- Z's side: what it checks once sealed. Each returns "" or "CHECK: what it saw".

std::string CheckProc() {
  char self[16] = {};
  if (readlink("/proc/self", self, sizeof(self) - 1) < 0 || std::string(self) != "1") {
    return std::string("pid_one: /proc/self -> ") + self;
  }
  for (const std::string& name : List("/proc")) {
    if (isdigit(name[0]) && name != "1") return "own_pids: /proc lists pid " + name;
  }
  for (const char* path : kMaskedProcPaths) {
    struct stat st;
    if (stat(path, &st) != 0) continue;  // not on this kernel
    const bool masked = S_ISDIR(st.st_mode) ? List(path).empty()
                                            : S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3);
    if (!masked) return std::string("masks: ") + path + " is not masked";
  }
  for (const char* path : {"/proc/keys", "/proc/timer_list"}) {
    if (!ReadFile(path).empty()) return std::string("masks: ") + path + " has bytes";
  }
  // Z still has every capability in its user namespace, so only the mount refuses this.
  const int fd = open("/proc/sys/user/max_user_namespaces", O_WRONLY | O_CLOEXEC);
  if (fd >= 0 || errno != EROFS) {
    return "proc_sys_read_only: open O_WRONLY gave " + std::to_string(fd < 0 ? errno : 0);
  }
  return "";
}

std::string CheckCode() {
  if (ReadFile(std::string("/code/") + kCodeFile) != kCodeText) return "code: not the test's file";
  const int fd = open("/code/new", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd >= 0 || errno != EROFS) return "code_read_only: " + std::to_string(fd < 0 ? errno : 0);
  return "";
}

std::string CheckOwnTmpfs(const char* dir, dev_t before, const Ids& ids) {
  struct stat st;
  if (stat(dir, &st) != 0 || st.st_dev == before) return std::string("own_tmpfs: ") + dir;
  if ((st.st_mode & 07777) != 01777) return std::string("tmpfs_mode: ") + dir;
  if (!List(dir).empty()) return std::string("tmpfs_empty: ") + dir + " holds files";
  const std::string file = std::string(dir) + "/mine";
  if (!(std::ofstream(file) << "mine") || stat(file.c_str(), &st) != 0) {
    return std::string("tmpfs_writable: ") + dir;
  }
  if (st.st_uid != ids.uid || st.st_gid != ids.gid) return "tmpfs_owner: " + file;
  return "";
}

// The limits the test gave F (DefaultUsernsLimits(0)): at most 16 inotify instances and
// no user namespace of its own.
std::string CheckLimits() {
  std::vector<UniqueFd> instances;
  while (instances.size() < 64) {
    UniqueFd fd(inotify_init1(IN_CLOEXEC));
    if (!fd.valid()) break;
    instances.push_back(std::move(fd));
  }
  if (instances.size() != 16 || errno != EMFILE) {
    return "inotify_limit: " + std::to_string(instances.size()) + " instances";
  }
  if (unshare(CLONE_NEWUSER) == 0 || errno != ENOSPC) return "userns_limit";
  return "";
}

std::string CheckSealed(const ZygoteBefore& before, const Ids& ids) {
  for (std::string failed : {CheckProc(), CheckCode(), CheckOwnTmpfs("/tmp", before.tmp, ids),
                             CheckOwnTmpfs("/dev/shm", before.shm, ids)}) {
    if (!failed.empty()) return failed;
  }
  if (before.lo_up || !LoopbackUp()) return "lo_up";
  if (getuid() != ids.uid || getgid() != ids.gid) return "ids: " + std::to_string(getuid());
  const std::string limits = CheckLimits();
  return limits.empty() ? "ok" : limits;
}

// ---- The test's side.

// Nothing mounted on the host under the test's directory, nor over the places Z gets.
std::string HostMounts(const std::string& under) {
  std::string found;
  std::istringstream table(ReadFile("/proc/self/mountinfo"));
  for (std::string line; std::getline(table, line);) {
    if (line.find(" " + under) != std::string::npos) found += line + "\n";
  }
  for (const char* place : {"/proc", "/tmp", "/dev/shm"}) {
    struct stat st;
    stat(place, &st);
    found += std::string(place) + " " + std::to_string(st.st_dev) + "\n";
  }
  return found;
}

// The whole positive case, for the tests and for an ordinary user's child: "ok", or what
// went wrong first.
std::string SealAndCheck(const Ids& ids) {
  CodeDir code;
  const std::string host_before = HostMounts(code.base());
  Runtime runtime(ids, CheckSealed);
  if (!runtime.error().empty()) return runtime.error();
  std::optional<Zygote> zygote = runtime.Fork();
  if (!zygote.has_value()) return "the runtime did not fork a zygote";
  const std::string runtime_before = runtime.Mounts();
  const absl::Status sealed = SealForkedZygote(runtime.Target(*zygote), code.Options(ids));
  if (!sealed.ok()) return sealed.ToString();
  if (runtime.Mounts() != runtime_before) return "R's mount table changed";
  if (HostMounts(code.base()) != host_before) return "the host's mount table changed";
  return zygote->Go();
}

// Seals `zygote` and lets it check: "ok", the refusal, or what it found wrong.
std::string SealAndGo(const Runtime& runtime, Zygote& zygote, const ForkedZygoteOptions& options) {
  const absl::Status sealed = SealForkedZygote(runtime.Target(zygote), options);
  return sealed.ok() ? zygote.Go() : sealed.ToString();
}

class ForkedZygoteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (it makes user namespaces with many ids)";
  }
  const Ids ids_{1000, 1000};
};

TEST_F(ForkedZygoteTest, SealsAZygoteInItsOwnNamespaces) {
  // Controls on the host: a masked file has bytes, and /proc/sys opens for writing (for
  // nothing to be written).
  EXPECT_FALSE(ReadFile("/proc/timer_list").empty());
  EXPECT_TRUE(UniqueFd(open("/proc/sys/kernel/hostname", O_WRONLY | O_CLOEXEC)).valid());
  EXPECT_EQ(SealAndCheck(ids_), "ok");
}

TEST_F(ForkedZygoteTest, AsAnOrdinaryUserOwningR) {
  int result[2];
  ASSERT_EQ(pipe2(result, O_CLOEXEC), 0);
  const pid_t child = fork();
  if (child == 0) {
    std::string report = "could not become nobody";
    // Dumpable again after the uid change, as a program nobody started is, or its
    // children's /proc files (uid_map) stay root's.
    if (setgroups(0, nullptr) == 0 && setresgid(65534, 65534, 65534) == 0 &&
        setresuid(65534, 65534, 65534) == 0 && prctl(PR_SET_DUMPABLE, 1) == 0) {
      report = SealAndCheck({0, 0});
    }
    (void)!write(result[1], report.data(), report.size());
    _exit(0);
  }
  close(result[1]);
  char buffer[4096];
  std::string report;
  for (ssize_t n; (n = read(result[0], buffer, sizeof(buffer))) > 0;) report.append(buffer, n);
  close(result[0]);
  waitpid(child, nullptr, 0);
  EXPECT_EQ(report, "ok");
}

TEST_F(ForkedZygoteTest, AZygoteThatKeptTheRuntimesMountNamespaceIsRefused) {
  CodeDir code;
  Runtime runtime(ids_, CheckSealed);
  ASSERT_EQ(runtime.error(), "");
  std::optional<Zygote> shared = runtime.Fork({kZygoteNamespaces & ~CLONE_NEWNS});
  ASSERT_TRUE(shared.has_value());
  const std::string before = runtime.Mounts();
  const absl::Status sealed = SealForkedZygote(runtime.Target(*shared), code.Options(ids_));
  EXPECT_EQ(sealed.code(), absl::StatusCode::kFailedPrecondition) << sealed;
  EXPECT_NE(sealed.message().find("mount namespace"), std::string::npos) << sealed;
  EXPECT_EQ(runtime.Mounts(), before) << "something was mounted in R's mount namespace";
  EXPECT_EQ(ReadFile("/proc/" + std::to_string(shared->pid) + "/uid_map"), "");
  // Control: the same runtime's zygote in a mount namespace of its own.
  std::optional<Zygote> own = runtime.Fork();
  ASSERT_TRUE(own.has_value());
  EXPECT_EQ(SealAndGo(runtime, *own, code.Options(ids_)), "ok");
  EXPECT_EQ(runtime.Mounts(), before);
}

TEST_F(ForkedZygoteTest, AZygoteThatIsNotPidOneIsRefused) {
  CodeDir code;
  Runtime runtime(ids_, CheckSealed);
  ASSERT_EQ(runtime.error(), "");
  ForkRequest second;
  second.second_child = true;
  std::optional<Zygote> pid_two = runtime.Fork(second);
  ASSERT_TRUE(pid_two.has_value());
  const absl::Status sealed = SealForkedZygote(runtime.Target(*pid_two), code.Options(ids_));
  EXPECT_EQ(sealed.code(), absl::StatusCode::kFailedPrecondition) << sealed;
  EXPECT_NE(sealed.message().find("pid 2"), std::string::npos) << sealed;
  // Control: pid 1 of the same kind of namespaces.
  std::optional<Zygote> pid_one = runtime.Fork();
  ASSERT_TRUE(pid_one.has_value());
  EXPECT_EQ(SealAndGo(runtime, *pid_one, code.Options(ids_)), "ok");
}

TEST_F(ForkedZygoteTest, ACodeDirSwappedAfterItWasCheckedIsRefused) {
  CodeDir code;
  Runtime runtime(ids_, CheckSealed);
  ASSERT_EQ(runtime.error(), "");
  std::optional<Zygote> zygote = runtime.Fork();
  ASSERT_TRUE(zygote.has_value());
  const ForkedZygoteOptions checked = code.Options(ids_);
  const std::string before = runtime.Mounts();
  // Swapped for another directory: same path, another inode.
  const std::string moved = code.base() + "/moved";
  ASSERT_EQ(rename(code.path().c_str(), moved.c_str()), 0);
  ASSERT_EQ(mkdir(code.path().c_str(), 0755), 0);
  std::ofstream(code.path() + "/" + kCodeFile) << kCodeText;
  absl::Status sealed = SealForkedZygote(runtime.Target(*zygote), checked);
  EXPECT_EQ(sealed.code(), absl::StatusCode::kFailedPrecondition) << sealed;
  // Swapped for a symlink to the directory that was checked.
  ASSERT_EQ(unlink((code.path() + "/" + kCodeFile).c_str()), 0);
  ASSERT_EQ(rmdir(code.path().c_str()), 0);
  ASSERT_EQ(symlink(moved.c_str(), code.path().c_str()), 0);
  sealed = SealForkedZygote(runtime.Target(*zygote), checked);
  EXPECT_EQ(sealed.code(), absl::StatusCode::kFailedPrecondition) << sealed;
  // Refused before anything was written or mounted: the same zygote is sealed once the
  // directory is back.
  EXPECT_EQ(ReadFile("/proc/" + std::to_string(zygote->pid) + "/uid_map"), "");
  EXPECT_EQ(runtime.Mounts(), before);
  ASSERT_EQ(unlink(code.path().c_str()), 0);
  ASSERT_EQ(rename(moved.c_str(), code.path().c_str()), 0);
  EXPECT_EQ(SealAndGo(runtime, *zygote, checked), "ok");
}

TEST_F(ForkedZygoteTest, AZygoteThatIsGoneIsRefused) {
  CodeDir code;
  Runtime runtime(ids_, CheckSealed);
  ASSERT_EQ(runtime.error(), "");
  std::optional<Zygote> gone = runtime.Fork();
  ASSERT_TRUE(gone.has_value());
  ASSERT_EQ(base::sys::RawPidfdSendSignal(gone->pidfd.get(), SIGKILL), 0);
  pollfd exited = {gone->pidfd.get(), POLLIN, 0};
  ASSERT_EQ(poll(&exited, 1, 5000), 1);
  const absl::Status sealed = SealForkedZygote(runtime.Target(*gone), code.Options(ids_));
  EXPECT_EQ(sealed.code(), absl::StatusCode::kFailedPrecondition) << sealed;
  // Control: a live one.
  std::optional<Zygote> live = runtime.Fork();
  ASSERT_TRUE(live.has_value());
  EXPECT_EQ(SealAndGo(runtime, *live, code.Options(ids_)), "ok");
}

}  // namespace
}  // namespace zygo::core
