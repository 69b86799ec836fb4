// Which functions fork their zygotes from a runtime zygote (the zygote tree,
// docs/supervisor.md), and what that takes: the runtime's sandbox, derived from the
// function's own, the key that tells which functions may share one, and what a forked
// zygote is sealed with so that it ends up in the sandbox the function would have had.
#ifndef ZYGO_SUPERVISOR_FUNCTION_TREE_H_
#define ZYGO_SUPERVISOR_FUNCTION_TREE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/plan.h"
#include "core/spec.h"
#include "supervisor/forked_zygote_process.h"
#include "supervisor/function_spec.h"

namespace zygo::supervisor {

// The standard library modules a runtime zygote imports before it forks: the common ones a
// handler imports (bench/warm's sixteen among them), so a function that imports only
// these pays nothing for them.
const std::vector<std::string>& RuntimePreload();

// Why `function` runs in a sandbox of its own rather than forked from a runtime zygote;
// empty when it can fork from one.
std::string WhyNotInTree(const FunctionSpec& function);

// The runtime zygote's sandbox for a function whose own sandbox is `function_sandbox`
// (after the image was applied, with the agent's volume, before planning): the same root,
// image environment, ids, venv and interpreter start-up environment (PATH, PYTHON*, LD_*,
// the locale, TZ, HOME: what the interpreter or the preloaded modules read once, at start);
// an empty read-only /code from `empty_dir`; none of the function's other environment,
// network or limits; the agent (at `agent_path` inside) in runtime mode, its user namespace
// sized for its function zygotes, each of which may make `nested_namespaces` of its own.
core::Spec RuntimeSandboxSpec(const core::Spec& function_sandbox, const FunctionSpec& function,
                              const std::string& empty_dir, const std::string& agent_path,
                              int nested_namespaces);

// Equal for exactly the runtime sandboxes that are the same, so functions share one.
std::string RuntimeKey(const core::Spec& runtime_sandbox);

// What the forked zygote of `function`, whose own sandbox would be `plan`, is sealed with:
// its code (checked to resolve where it did at `zygo up`), /tmp and /dev/shm sizes, ids,
// user namespace limits (`nested_namespaces` for its spares), and in Seal its whole
// environment, working directory, entry, preload modules and the seccomp filter.
absl::StatusOr<ForkedZygoteSpec> ForkedSpecFor(const FunctionSpec& function, const core::Plan& plan,
                                               int nested_namespaces);

}  // namespace zygo::supervisor

#endif  // ZYGO_SUPERVISOR_FUNCTION_TREE_H_
