// Seal (wire v8): what the supervisor tells a function zygote that a runtime zygote forked
// (a runtime zygote holds an interpreter and its standard library and knows no function;
// docs/agents.md, "The zygote tree"). The forked zygote sends Forked over the runtime's
// channel like a spare, waits in namespaces of its own while the supervisor seals them
// from outside (core/forked_zygote.h), and learns only then which function it becomes.
#ifndef ZYGO_AGENTS_WIRE_SEAL_H_
#define ZYGO_AGENTS_WIRE_SEAL_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agents/wire/frame.h"

namespace zygo::wire {

// A Seal frame carries exactly this many fds: the write end of the function's own log,
// which becomes the zygote's stdout and stderr.
inline constexpr size_t kSealFdCount = 1;
inline constexpr size_t kMaxSealEnvEntries = 4096;
inline constexpr size_t kMaxSealPreloads = 256;
// A classic BPF program's instruction limit (BPF_MAXINSNS), 8 bytes each.
inline constexpr size_t kMaxSealFilterBytes = 4096 * 8;

// supervisor -> forked function zygote, on the channel it handed over in Forked, once;
// request_id 0. The zygote applies it in this order: stdio, its own cgroup namespace, no
// capabilities, no_new_privs, `seccomp_filter` stacked, its own Landlock domain,
// `workdir`, `env`; then the language's part: `code_dir` first on the module path, the
// `preload` modules, `entry` (or a pool), Hello.
struct SealMessage {
  std::vector<std::string> env;  // the whole environment: "KEY=VALUE", KEY not empty, no NUL
  std::string workdir;           // absolute
  std::string code_dir;          // absolute
  std::string entry;             // "FILE.py:FUNCTION"; empty: a runtime pool
  std::vector<std::string> preload;  // module names, none empty, no NUL
  // struct sock_filter[], native byte order: the filter that narrows the runtime sandbox's
  // allowlist back to a function's (core/seccomp_policy.h). Required, a multiple of 8 bytes.
  std::string seccomp_filter;
};

absl::StatusOr<Frame> Encode(const SealMessage& message);
// Requires kSealFdCount fds, which stay owned by `received`.
absl::StatusOr<SealMessage> DecodeSeal(const ReceivedFrame& received);

}  // namespace zygo::wire

#endif  // ZYGO_AGENTS_WIRE_SEAL_H_
