// PidfdParentPid against a child of this test: the parent it names is this process while the
// child lives, agrees with /proc, and the child's end shows as NotFound.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/base/sys/fs.h"
#include "core/base/sys/process.h"
#include "core/base/unique_fd.h"
#include "gtest/gtest.h"

namespace zygo::base::sys {
namespace {

TEST(PidfdParentPid, NamesTheParentUntilTheChildIsReaped) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    pause();
    _exit(0);
  }
  UniqueFd pidfd(RawPidfdOpen(child));
  ASSERT_TRUE(pidfd.valid());

  absl::StatusOr<pid_t> parent = PidfdParentPid(pidfd.get(), child);
  ASSERT_TRUE(parent.ok()) << parent.status();
  EXPECT_EQ(*parent, getpid());
  EXPECT_EQ(*parent, ReadParentPid(child).value_or(-1));

  // A process that is not our child: our own parent's parent is not us.
  absl::StatusOr<pid_t> own_parent = ReadParentPid(getpid());
  ASSERT_TRUE(own_parent.ok());
  UniqueFd self(RawPidfdOpen(getpid()));
  ASSERT_TRUE(self.valid());
  EXPECT_EQ(PidfdParentPid(self.get(), getpid()).value_or(-1), *own_parent);

  ASSERT_EQ(kill(child, SIGKILL), 0);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  EXPECT_TRUE(absl::IsNotFound(PidfdParentPid(pidfd.get(), child).status()));
}

}  // namespace
}  // namespace zygo::base::sys
