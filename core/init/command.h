// The sandboxed command, as zygo-init starts it: a fork that execs the first candidate
// path that works, with only the fds the layout gives it.
#ifndef ZYGO_CORE_INIT_COMMAND_H_
#define ZYGO_CORE_INIT_COMMAND_H_

#include <sys/types.h>

namespace zygo::core::init {

struct CommandArgs {
  int inherited = 0;              // fds 3 .. 3+inherited-1 cross into the command
  const char* const* candidates;  // NULL-terminated exec paths for argv[0]
  char* const* argv;              // NULL-terminated
  char* const* envp;              // NULL-terminated
};

// Forks the command and reports to `report_fd` whether its execve worked (kExecStarted or
// kExecFailed). Returns its pid; if the fork (or its exec pipe) fails, reports the step
// and exits 125. The command starts with an empty signal mask and default dispositions.
pid_t StartCommand(const CommandArgs& args, int report_fd);

}  // namespace zygo::core::init

#endif  // ZYGO_CORE_INIT_COMMAND_H_
