// A child's waitpid status in words, for errors: "exited 1", "killed by SIGKILL".
#ifndef ZYGO_CORE_BASE_SYS_WAIT_STATUS_H_
#define ZYGO_CORE_BASE_SYS_WAIT_STATUS_H_

#include <string>

namespace zygo::base::sys {

std::string DescribeWaitStatus(int wait_status);

}  // namespace zygo::base::sys

#endif  // ZYGO_CORE_BASE_SYS_WAIT_STATUS_H_
