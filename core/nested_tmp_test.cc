// MountOwnTmp against real processes (as root, the test process standing for the sandbox):
// a child in a user and mount namespace of its own gets an empty, writable tmpfs on /tmp,
// its ids mapped and no user namespace of its own to make; a child that did not unshare is
// refused, and the host's /tmp is never covered; a gone child is refused.
#include "core/nested_tmp.h"

#include <errno.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "core/base/sys/process.h"
#include "core/base/unique_fd.h"

namespace zygo::core {
namespace {

constexpr long kTmpfsMagic = 0x01021994;

// A child that (when `own_namespaces`) unshares, says so on a pipe, waits for the go-ahead,
// then checks its /tmp; its exit status is the first check that failed (0: all held).
class Child {
 public:
  explicit Child(bool own_namespaces) {
    int ready[2], go[2];
    if (pipe(ready) != 0 || pipe(go) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      close(ready[0]);
      close(go[1]);
      char byte = 'x';
      if (own_namespaces && unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) _exit(10);
      if (write(ready[1], &byte, 1) != 1) _exit(11);
      if (read(go[0], &byte, 1) != 1) _exit(12);
      _exit(own_namespaces ? CheckOwnTmp() : 0);
    }
    close(ready[1]);
    close(go[0]);
    char byte;
    ready_ = read(ready[0], &byte, 1) == 1;
    close(ready[0]);
    go_ = base::UniqueFd(go[1]);
    pidfd_ = base::UniqueFd(base::sys::RawPidfdOpen(pid_));
  }

  ~Child() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

  // Lets it check, and returns its exit status.
  int Finish() {
    const char byte = 'g';
    if (write(go_.get(), &byte, 1) != 1) return -1;
    go_.Reset();
    int status = 0;
    waitpid(pid_, &status, 0);
    reaped_ = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
  }

  NestedTmpTarget Target(const base::UniqueFd& self_pidfd) const {
    return {getpid(), self_pidfd.get(), pid_, pidfd_.get()};
  }
  bool ready() const { return ready_ && pidfd_.valid(); }

 private:
  static int CheckOwnTmp() {
    struct statfs fs;
    if (statfs("/tmp", &fs) != 0 || fs.f_type != kTmpfsMagic) return 20;
    struct stat st;
    if (stat("/tmp", &st) != 0 || (st.st_mode & 07777) != 01777) return 21;
    if (std::ifstream("/tmp/zygo-nested-tmp-test").good()) return 22;  // not empty
    if (!(std::ofstream("/tmp/zygo-nested-tmp-test-child") << "mine")) return 23;
    if (getuid() != 0 || getgid() != getegid()) return 24;          // mapped one to one
    if (unshare(CLONE_NEWUSER) == 0 || errno != ENOSPC) return 25;  // max_user_namespaces 0
    return 0;
  }

  pid_t pid_ = -1;
  bool ready_ = false, reaped_ = false;
  base::UniqueFd go_, pidfd_;
};

class NestedTmpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (it mounts into a child's namespace)";
    self_ = base::UniqueFd(base::sys::RawPidfdOpen(getpid()));
    ASSERT_TRUE(self_.valid());
    // A file of the host's /tmp, which no child's own /tmp may show.
    std::ofstream("/tmp/zygo-nested-tmp-test") << "host";
    ASSERT_EQ(stat("/tmp", &host_tmp_), 0);
  }
  void TearDown() override {
    unlink("/tmp/zygo-nested-tmp-test");
    struct stat now;
    ASSERT_EQ(stat("/tmp", &now), 0);
    EXPECT_EQ(now.st_dev, host_tmp_.st_dev) << "the host's /tmp was covered";
  }

  base::UniqueFd self_;
  struct stat host_tmp_ = {};
};

TEST_F(NestedTmpTest, AChildInItsOwnNamespacesGetsAnEmptyWritableTmpfs) {
  Child child(/*own_namespaces=*/true);
  ASSERT_TRUE(child.ready());
  const absl::Status mounted =
      MountOwnTmp(child.Target(self_), {1 << 20, static_cast<uint32_t>(getegid())});
  ASSERT_TRUE(mounted.ok()) << mounted;
  EXPECT_EQ(child.Finish(), 0) << "failed check (see CheckOwnTmp)";
  EXPECT_FALSE(std::ifstream("/tmp/zygo-nested-tmp-test-child").good())
      << "the child's file reached the host";
}

TEST_F(NestedTmpTest, AChildThatDidNotUnshareIsRefused) {
  Child child(/*own_namespaces=*/false);
  ASSERT_TRUE(child.ready());
  const absl::Status mounted =
      MountOwnTmp(child.Target(self_), {1 << 20, static_cast<uint32_t>(getegid())});
  EXPECT_EQ(mounted.code(), absl::StatusCode::kFailedPrecondition) << mounted;
  EXPECT_EQ(child.Finish(), 0);
}

TEST_F(NestedTmpTest, AChildThatIsGoneIsRefused) {
  Child child(/*own_namespaces=*/true);
  ASSERT_TRUE(child.ready());
  NestedTmpTarget target = child.Target(self_);
  child.Finish();  // Exits (its check fails without a mount) and is reaped: its pid is free.
  EXPECT_FALSE(MountOwnTmp(target, {1 << 20, static_cast<uint32_t>(getegid())}).ok());
}

}  // namespace
}  // namespace zygo::core
