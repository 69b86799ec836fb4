// Request isolation pieces, tried for real: the spare's own namespaces (and no capability
// left from them), the Landlock domain (in a forked child, with allow controls), and the
// two together as a spare applies them.
#include "agents/isolation/isolation.h"

#include <errno.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace zygo::agents::isolation {
namespace {

std::string TestDir(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/", name, "-", ::getpid());
  ::mkdir(dir.c_str(), 0755);
  return dir;
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

// errno of creating `path` for writing (0 on success).
int CreateErrno(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return errno;
  ::close(fd);
  return 0;
}

// Exit status of a child that runs `body`.
template <typename Body>
int InChild(Body body) {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(body());
  int wstatus = 0;
  if (child < 0 || ::waitpid(child, &wstatus, 0) != child || !WIFEXITED(wstatus)) return -1;
  return WEXITSTATUS(wstatus);
}

bool HasEffectiveCapability() {
  __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (::syscall(SYS_capget, &header, data) != 0) return true;
  return data[0].effective != 0 || data[1].effective != 0 || data[0].permitted != 0 ||
         data[1].permitted != 0;
}

// The control: unshare alone leaves the spare every capability in its new namespace, and
// a mount there goes through. EnterOwnNamespaces leaves none, bounding set included, and
// the same mount is refused.
TEST(IsolationTest, OwnNamespacesLeaveNoCapability) {
  EXPECT_EQ(InChild([] {
              if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) return 10;
              if (!HasEffectiveCapability()) return 11;
              return ::mount("none", "/tmp", "tmpfs", 0, nullptr) == 0 ? 0 : 12;
            }),
            0);
  EXPECT_EQ(InChild([] {
              struct stat before, after;
              if (::stat("/proc/self/ns/user", &before) != 0) return 20;
              if (!EnterOwnNamespaces().ok()) return 21;
              if (::stat("/proc/self/ns/user", &after) != 0) return 22;
              if (before.st_ino == after.st_ino) return 23;  // not a namespace of its own
              if (HasEffectiveCapability()) return 24;
              for (int cap = 0; cap <= CAP_LAST_CAP; ++cap) {
                if (::prctl(PR_CAPBSET_READ, cap, 0, 0, 0) == 1) return 25;
              }
              if (::mount("none", "/tmp", "tmpfs", 0, nullptr) == 0) return 26;
              return errno == EPERM ? 0 : 27;
            }),
            0);
}

TEST(IsolationTest, LandlockAllowsWritesOnlyBeneathTheTmpDir) {
  const int abi = LandlockAbi();
  if (abi < 1) GTEST_SKIP() << "the kernel has no Landlock";
  const std::string base = TestDir("landlock");
  const std::string tmp = base + "/tmp";
  ASSERT_EQ(::mkdir(tmp.c_str(), 0700), 0);
  // Prepared before the fork, as the zygote does; the child must not keep its fds.
  absl::StatusOr<LandlockBase> landlock = PrepareLandlockBase();
  ASSERT_TRUE(landlock.ok()) << landlock.status();
  ASSERT_FALSE(landlock->entries.empty());
  std::vector<int> base_fds;
  for (const LandlockBase::Entry& entry : landlock->entries) base_fds.push_back(entry.fd.get());
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    for (int fd : base_fds) {
      if (::fcntl(fd, F_GETFD) < 0) ::_exit(17);  // inherited: the control for 18
    }
    absl::StatusOr<int> applied = RestrictToRequest(*landlock, tmp);
    if (!applied.ok() || *applied != abi) ::_exit(10);
    for (int fd : base_fds) {
      if (::fcntl(fd, F_GETFD) >= 0 || errno != EBADF) ::_exit(18);  // closed by Restrict
    }
    if (CreateErrno(tmp + "/inside") != 0) ::_exit(11);            // Allowed.
    if (CreateErrno(base + "/outside") != EACCES) ::_exit(12);     // Denied.
    if (::open("/dev/null", O_WRONLY | O_TRUNC) < 0) ::_exit(13);  // Allowed.
    if (::open("/etc/hostname", O_RDONLY) < 0) ::_exit(14);        // Reads stay allowed.
    if (abi >= 6) {
      // The parent is outside the new domain: even signal 0 is refused. Itself: allowed.
      if (::kill(::getppid(), 0) == 0 || errno != EPERM) ::_exit(15);
      if (::kill(::getpid(), 0) != 0) ::_exit(16);
    }
    ::_exit(0);
  }
  int wstatus = 0;
  ASSERT_EQ(::waitpid(child, &wstatus, 0), child);
  ASSERT_TRUE(WIFEXITED(wstatus));
  EXPECT_EQ(WEXITSTATUS(wstatus), 0) << "failed check " << WEXITSTATUS(wstatus);
  EXPECT_TRUE(Exists(tmp + "/inside"));
  EXPECT_FALSE(Exists(base + "/outside"));
  // The zygote's own copies stay open for its next spares.
  for (int fd : base_fds) EXPECT_GE(::fcntl(fd, F_GETFD), 0) << fd;
}

// A spare id no other process of this test run uses: its dir is in the host's /tmp.
// The zygote's failure to prepare its base is the spare's.
TEST(IsolationTest, IsolateSpareFailsWithoutTheZygotesBase) {
  absl::StatusOr<LandlockBase> unprepared = absl::InternalError("no base");
  EXPECT_EQ(IsolateSpare(unprepared), unprepared.status());
}

// As a spare applies it (here on the host's /tmp, which stands for the spare's own): writes
// beneath /tmp go through, others are refused, and the zygote's fds of "/" are closed.
TEST(IsolationTest, IsolateSpareAllowsWritesOnlyBeneathTmp) {
  const int abi = LandlockAbi();
  if (abi < 1) GTEST_SKIP() << "the kernel has no Landlock";
  absl::StatusOr<LandlockBase> landlock = PrepareLandlockBase();
  ASSERT_TRUE(landlock.ok()) << landlock.status();
  const std::string outside = TestDir("isolate-spare") + "/outside";
  const std::string inside = absl::StrCat(kRequestTmp, "/zygo-isolation-test-", ::getpid());
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (!IsolateSpare(landlock).ok()) ::_exit(10);
    if (landlock->abi != abi || !landlock->entries.empty()) ::_exit(11);
    if (CreateErrno(inside) != 0) ::_exit(12);        // Allowed.
    if (CreateErrno(outside) != EACCES) ::_exit(13);  // Denied.
    ::_exit(0);
  }
  int wstatus = 0;
  ASSERT_EQ(::waitpid(child, &wstatus, 0), child);
  ASSERT_TRUE(WIFEXITED(wstatus)) << wstatus;
  EXPECT_EQ(WEXITSTATUS(wstatus), 0) << "failed check " << WEXITSTATUS(wstatus);
  EXPECT_TRUE(Exists(inside));
  EXPECT_FALSE(Exists(outside));
  ::unlink(inside.c_str());
}

TEST(IsolationTest, DieWithParentChecksTheParent) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (!DieWithParent(::getppid()).ok()) ::_exit(1);
    ::_exit(DieWithParent(::getppid() + 1).ok() ? 2 : 0);  // Not our parent: refused.
  }
  int wstatus = 0;
  ASSERT_EQ(::waitpid(child, &wstatus, 0), child);
  EXPECT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) << wstatus;
}

}  // namespace
}  // namespace zygo::agents::isolation
