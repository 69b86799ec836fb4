// A spare: a child of the zygote, forked ahead of demand, already in its own cgroup,
// parked on its own channel until a request arrives.
#ifndef ZYGO_SUPERVISOR_ZYGOTE_SPARE_H_
#define ZYGO_SUPERVISOR_ZYGOTE_SPARE_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>

#include "core/base/unique_fd.h"
#include "core/cgroup.h"

namespace zygo::supervisor {

struct Spare {
  uint64_t id = 0;
  pid_t pid = 0;  // in the supervisor's pid namespace
  // As the sandbox numbers it, by the spare's own word (its Forked message): only for
  // telling which request a seccomp kill of zygo-init's was, a report about the
  // function's own requests that the function's own code could at worst misplace.
  pid_t sandbox_pid = 0;
  base::UniqueFd channel;                // the supervisor's end of its child channel
  base::UniqueFd pidfd;                  // the process itself, never a recycled pid
  std::unique_ptr<core::Cgroup> cgroup;  // its own, nested in the function's; null unlimited
  int64_t fork_us = 0;                   // Spawn sent until Forked arrived
  int64_t admit_us = 0;                  // making its cgroup and moving it in
  // The request ended by itself (an answer, not a kill): once empty, its cgroup can serve
  // the next spare if no limit was hit (counters that cannot be reset are still zero).
  bool cgroup_reusable = false;
  // Sent Join (cgroup v1): its answer, Joined or Error, is read before its Run.
  bool joining = false;
  // Its request's stdin, stdout and stderr, made with the spare (off the request path).
  base::UniqueFd stdio[3];
};

}  // namespace zygo::supervisor

#endif  // ZYGO_SUPERVISOR_ZYGOTE_SPARE_H_
