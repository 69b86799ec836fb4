// zygo-agent-python --runtime: a runtime zygote. It holds the interpreter and the standard
// library modules the supervisor names, and no function: each Spawn forks a function zygote
// (agents/zygote/function_fork.h), which the supervisor seals into namespaces of its own and
// then tells, in Seal, which function to import. So functions on one image share the
// interpreter's pages, and each pays only for its own imports (docs/agents.md).
#ifndef ZYGO_AGENTS_PYTHON_RUNTIME_ZYGOTE_H_
#define ZYGO_AGENTS_PYTHON_RUNTIME_ZYGOTE_H_

#include "agents/python/interpreter.h"
#include "agents/zygote/zygote.h"

namespace zygo::agents::python {

class RuntimeSpareRunner : public zygote::SpareRunner {
 public:
  explicit RuntimeSpareRunner(Interpreter& interpreter) : interpreter_(interpreter) {}

  void BeforeFork() override;
  void AfterForkInParent() override;
  // Becomes a function zygote: sealed first, Python's after-fork work only then (it runs
  // at-fork hooks, code of the image's), the function's environment into os.environ, then
  // the function's warm-up and zygote loop (warm_function.h). Never returns.
  [[noreturn]] void RunSpare(const zygote::SpareContext& context) override;

 private:
  Interpreter& interpreter_;
};

}  // namespace zygo::agents::python

#endif  // ZYGO_AGENTS_PYTHON_RUNTIME_ZYGOTE_H_
