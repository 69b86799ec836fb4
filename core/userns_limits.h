// Limits of the sandbox's own user namespace on what the kernel counts per user rather
// than per namespace: inotify instances and watches, and nested user namespaces. The kernel charges
// these to every ancestor namespace too, so without a limit of its own a sandbox (whose root is the
// host's root when zygo runs as root) could take the host user's whole budget: host root's
// inotify_init1 then fails with EMFILE. Plan in the parent, apply in the child.
#ifndef ZYGO_CORE_USERNS_LIMITS_H_
#define ZYGO_CORE_USERNS_LIMITS_H_

#include <string>
#include <vector>

#include "core/child_failure.h"

namespace zygo::core {

struct UsernsLimit {
  std::string path;   // a /proc/sys/user file: the limit of the writer's user namespace
  std::string value;  // written as is
};

// Parent side: the limits every sandbox's user namespace gets; it may make at most
// `nested_namespaces` user namespaces of its own (Spec::nested_namespaces).
std::vector<UsernsLimit> DefaultUsernsLimits(int nested_namespaces);

// Parent side: the limits of a runtime zygote's user namespace (Spec::function_zygotes),
// within which each of its up to `function_zygotes` function zygotes gets a user namespace
// of its own with DefaultUsernsLimits(nested_namespaces) (core/forked_zygote.h). The
// kernel charges a namespace's inotify instances, watches and user namespaces to every
// ancestor too, so the runtime's are the sum: DefaultUsernsLimits' inotify values once for
// the runtime's agent and once per function zygote, and per function zygote its own user
// namespace, its `nested_namespaces`, and one more for a dead one's being freed while its
// successor is made.
std::vector<UsernsLimit> RuntimeUsernsLimits(int function_zygotes, int nested_namespaces);

// Child side, in the new user namespace while it still has CAP_SYS_RESOURCE there, and
// before the root changes (the host's /proc is the one still mounted). The files under
// /proc/sys/user are per user namespace (kernel/ucount.c): a write sets the writer's own
// namespace's limit, never the host's. A kernel without a file (older than 4.9) is skipped.
ChildFailure ApplyUsernsLimitsInChild(const std::vector<UsernsLimit>& limits);

}  // namespace zygo::core

#endif  // ZYGO_CORE_USERNS_LIMITS_H_
