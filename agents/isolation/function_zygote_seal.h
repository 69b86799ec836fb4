// What a function zygote forked by a runtime zygote does to itself once the supervisor has
// sealed its namespaces from outside (core/forked_zygote.h) and sent Seal: the process-level
// half of becoming the function's own sandbox. After it, the zygote holds no capability, is
// filtered exactly as a function's sandbox is and sits in a Landlock domain of its own, so
// the runtime zygote and every other function are out of its reach.
#ifndef ZYGO_AGENTS_ISOLATION_FUNCTION_ZYGOTE_SEAL_H_
#define ZYGO_AGENTS_ISOLATION_FUNCTION_ZYGOTE_SEAL_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace zygo::agents::isolation {

struct FunctionZygoteSeal {
  // struct sock_filter[] in native byte order: stacked on the runtime sandbox's filter.
  std::string seccomp_filter;
  std::string workdir;
  std::vector<std::string> env;  // the whole environment, KEY=VALUE
};

// In order: a cgroup namespace of its own (the supervisor has moved it into the function's
// cgroup, which becomes its root), every capability dropped, no_new_privs, the seccomp
// filter, its own Landlock domain (RestrictToFunction), the working directory, the
// environment replaced. Child side, in the forked zygote (pid 1 of its own pid namespace,
// in its own user namespace), before any of the function's code runs. Returns the Landlock
// ABI applied (0: no Landlock on this kernel).
absl::StatusOr<int> SealFunctionZygote(const FunctionZygoteSeal& seal);

// Stacks a Landlock domain of the caller's own on whatever it has: every filesystem access
// beneath "/" but making device nodes and device ioctls (what zygo-init gives a warm
// zygote: the /tmp a spare is given later is reached through this rule, since Landlock
// never checks a mount point's own), and on ABI >= 6 signals and abstract unix sockets
// scoped to the domain. So nothing the function runs can signal, ptrace or connect to the
// runtime zygote or another function's processes. Returns the ABI (0: nothing done).
// Child side; needs no_new_privs.
absl::StatusOr<int> RestrictToFunction();

}  // namespace zygo::agents::isolation

#endif  // ZYGO_AGENTS_ISOLATION_FUNCTION_ZYGOTE_SEAL_H_
