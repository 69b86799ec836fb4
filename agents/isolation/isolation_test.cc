// Request isolation pieces, tried for real: the temp dir, the Landlock domain (in a forked
// child, with allow controls), the two together as a spare applies them, and the
// symlink-safe tree removal.
#include "agents/isolation/isolation.h"

#include <errno.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/sys/remove_tree.h"

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

TEST(IsolationTest, RequestTmpDirIsNewAndPrivate) {
  EXPECT_EQ(RequestTmpDir(42), "/tmp/zygo-req-42");
  const std::string dir = TestDir("req") + "/spare";
  ASSERT_TRUE(MakeRequestTmpDir(dir).ok());
  struct stat st;
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(MakeRequestTmpDir(dir).code(), absl::StatusCode::kAlreadyExists);
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
uint64_t UniqueSpareId(int n) { return (static_cast<uint64_t>(::getpid()) << 24) | n; }

// Every way IsolateSpare fails still closes the zygote's fds of "/" in the spare: the
// zygote could not prepare its base, or the spare's dir already exists.
TEST(IsolationTest, IsolateSpareClosesTheBaseFdsWhateverFails) {
  absl::StatusOr<LandlockBase> unprepared = absl::InternalError("no base");
  EXPECT_EQ(IsolateSpare(UniqueSpareId(1), unprepared), unprepared.status());
  EXPECT_TRUE(base::sys::RemoveTree(RequestTmpDir(UniqueSpareId(1))).ok());

  if (LandlockAbi() < 1) GTEST_SKIP() << "the kernel has no Landlock";
  absl::StatusOr<LandlockBase> landlock = PrepareLandlockBase();
  ASSERT_TRUE(landlock.ok()) << landlock.status();
  ASSERT_FALSE(landlock->entries.empty());
  const std::string planted = RequestTmpDir(UniqueSpareId(2));
  ASSERT_EQ(::mkdir(planted.c_str(), 0777), 0);
  const absl::Status isolated = IsolateSpare(UniqueSpareId(2), landlock);
  EXPECT_EQ(isolated.code(), absl::StatusCode::kAlreadyExists) << isolated;
  EXPECT_TRUE(landlock->entries.empty());
  ::rmdir(planted.c_str());
}

TEST(IsolationTest, IsolateSpareMakesItsDirThenItsDomain) {
  const int abi = LandlockAbi();
  if (abi < 1) GTEST_SKIP() << "the kernel has no Landlock";
  absl::StatusOr<LandlockBase> landlock = PrepareLandlockBase();
  ASSERT_TRUE(landlock.ok()) << landlock.status();
  const std::string outside = TestDir("isolate-spare") + "/outside";
  const uint64_t id = UniqueSpareId(3);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (!IsolateSpare(id, landlock).ok()) ::_exit(10);
    if (landlock->abi != abi || !landlock->entries.empty()) ::_exit(11);
    if (CreateErrno(RequestTmpDir(id) + "/inside") != 0) ::_exit(12);  // Allowed.
    if (CreateErrno(outside) != EACCES) ::_exit(13);                   // Denied.
    ::_exit(0);
  }
  int wstatus = 0;
  ASSERT_EQ(::waitpid(child, &wstatus, 0), child);
  ASSERT_TRUE(WIFEXITED(wstatus)) << wstatus;
  EXPECT_EQ(WEXITSTATUS(wstatus), 0) << "failed check " << WEXITSTATUS(wstatus);
  EXPECT_TRUE(Exists(RequestTmpDir(id) + "/inside"));
  EXPECT_FALSE(Exists(outside));
  EXPECT_TRUE(base::sys::RemoveTree(RequestTmpDir(id)).ok());
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
