#include "core/base/sys/wait_status.h"

#include <string.h>
#include <sys/wait.h>

#include "absl/strings/str_cat.h"

namespace zygo::base::sys {

std::string DescribeWaitStatus(int wait_status) {
  if (WIFEXITED(wait_status)) return absl::StrCat("exited ", WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) {
    const char* name = sigabbrev_np(WTERMSIG(wait_status));
    return name != nullptr ? absl::StrCat("killed by SIG", name)
                           : absl::StrCat("killed by signal ", WTERMSIG(wait_status));
  }
  return absl::StrCat("ended with wait status ", wait_status);
}

}  // namespace zygo::base::sys
