// A runtime zygote's spare that becomes a function zygote (docs/agents.md, "The zygote
// tree"). The runtime zygote holds an interpreter and its standard library and knows no
// function; what it forks on Spawn makes namespaces of its own (user, mount, pid, net, ipc,
// uts), forks once more so that the function zygote is pid 1 of its own pid namespace,
// announces itself like a spare, and waits while the supervisor seals those namespaces from
// outside (core/forked_zygote.h: its own /proc, /code, /tmp, id maps and limits). Seal then
// tells it which function it is, and it seals itself (agents/isolation/function_zygote_seal.h)
// before the agent imports anything of the function. Only core/base and the wire protocol.
#ifndef ZYGO_AGENTS_ZYGOTE_FUNCTION_FORK_H_
#define ZYGO_AGENTS_ZYGOTE_FUNCTION_FORK_H_

#include "agents/wire/seal.h"
#include "agents/zygote/zygote.h"
#include "core/base/unique_fd.h"

namespace zygo::agents::zygote {

// Exit statuses of the runtime zygote's own child, which forks the function zygote and ends;
// the runtime reports them in Done(spare id).
enum FunctionForkExit : int {
  kFunctionForked = 0,         // the function zygote announced itself
  kFunctionNoNamespaces = 70,  // unshare of its namespaces failed
  kFunctionNoFork = 71,        // the fork into its own pid namespace failed
  kFunctionNotAnnounced = 72,  // the function zygote died or could not send Forked
};
// The function zygote's own exit when it cannot become the function (after Forked; what
// failed is on its stderr, the function's log once Seal arrived).
inline constexpr int kFunctionNotSealed = 125;

// A function zygote ready for the language's part.
struct SealedFunction {
  base::UniqueFd channel;  // the function's zygote channel; the supervisor holds the other end
  wire::SealMessage seal;
  int landlock_abi = 0;  // of the function's own domain; 0: the kernel has none
};

// Child side, in the runtime zygote's spare, before any runtime code runs in it (call it
// before the language's after-fork hooks, which run code of the image's). Returns only in the
// function zygote, sealed; the intermediate process _exits with a FunctionForkExit, and a
// function zygote that cannot be sealed prints why and _exits kFunctionNotSealed (EOF on its
// channel: the supervisor's sign it retired unused exits 0). Needs the runtime sandbox's
// allowance for unshare of those namespaces (core/seccomp_policy.h).
SealedFunction BecomeFunctionZygote(const SpareContext& context);

}  // namespace zygo::agents::zygote

#endif  // ZYGO_AGENTS_ZYGOTE_FUNCTION_FORK_H_
