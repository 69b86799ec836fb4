// A runtime zygote's fork: a function zygote, sealed, then warmed as the function.
#include "agents/python/runtime_zygote.h"

#include <unistd.h>

#include <cstdio>
#include <string>

#include "agents/python/warm_function.h"
#include "agents/zygote/function_fork.h"

namespace zygo::agents::python {

void RuntimeSpareRunner::BeforeFork() { interpreter_.api().PyOS_BeforeFork(); }

void RuntimeSpareRunner::AfterForkInParent() { interpreter_.api().PyOS_AfterFork_Parent(); }

void RuntimeSpareRunner::RunSpare(const zygote::SpareContext& context) {
  zygote::SealedFunction sealed = zygote::BecomeFunctionZygote(context);
  interpreter_.api().PyOS_AfterFork_Child();
  absl::Status status = interpreter_.ReplaceEnvironment(sealed.seal.env);
  absl::StatusOr<FunctionEntry> entry =
      status.ok() ? MakeFunctionEntry(sealed.seal.entry, sealed.seal.code_dir, sealed.seal.preload)
                  : absl::StatusOr<FunctionEntry>(status);
  if (entry.ok()) status = WarmAndServe(interpreter_, *entry, sealed.channel.get());
  if (!entry.ok()) status = entry.status();
  if (!status.ok()) {
    std::fprintf(stderr, "zygo-agent-python: %s\n", std::string(status.message()).c_str());
    ::_exit(zygote::kFunctionNotSealed);
  }
  ::_exit(0);
}

}  // namespace zygo::agents::python
