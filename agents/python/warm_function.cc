// The function zygote's warm-up and its zygote loop.
#include "agents/python/warm_function.h"

#include <stdlib.h>
#include <unistd.h>

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "agents/isolation/isolation.h"
#include "agents/python/allocator_holes.h"
#include "agents/python/spare.h"
#include "agents/wire/channel.h"
#include "agents/wire/messages.h"
#include "agents/zygote/zygote.h"
#include "core/base/sys/sched_attr.h"

namespace zygo::agents::python {

absl::StatusOr<FunctionEntry> MakeFunctionEntry(const std::string& entry,
                                                const std::string& code_dir,
                                                std::vector<std::string> preload) {
  FunctionEntry made;
  made.code_dir = code_dir;
  made.preload = std::move(preload);
  made.pool = entry.empty();
  if (made.pool) return made;
  const size_t colon = entry.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == entry.size()) {
    return absl::InvalidArgumentError(absl::StrCat("--entry ", entry, " is not FILE.py:FUNCTION"));
  }
  made.file = entry.substr(0, colon);
  made.function = entry.substr(colon + 1);
  if (made.file[0] != '/') made.file = absl::StrCat(code_dir, "/", made.file);
  return made;
}

absl::Status WarmAndServe(Interpreter& interpreter, const FunctionEntry& entry, int channel) {
  if (absl::Status status = interpreter.PrependSysPath(entry.code_dir); !status.ok()) return status;
  if (absl::Status status = interpreter.ImportModules(entry.preload); !status.ok()) return status;
  PyRef function;
  if (!entry.pool) {
    absl::StatusOr<PyRef> imported = interpreter.ImportFunction(entry.file, entry.function);
    if (!imported.ok()) return imported.status();
    function = std::move(*imported);
  }
  if (absl::Status status = interpreter.FreezeHeap(); !status.ok()) return status;
  // A request's allocations then start pools of their own instead of writing into free
  // blocks spread over pages every spare shares (allocator_holes.h). Only an optimisation:
  // an allocator without the table (PYTHONMALLOC=malloc) is simply left as it is.
  const absl::StatusOr<int64_t> filled = FillAllocatorHoles(interpreter.api());
  interpreter.FlushStdio();
  if (absl::Status hello = zygote::SendHello(channel, "python"); !hello.ok()) return hello;
  // The supervisor's short scheduler slice (inherited) is for the request path; the
  // zygote's forks are background work: with the short slice they preempted running
  // requests (a 1 ms fork in the middle of a 0.08 ms request, traced), with the default
  // one a caller's client woken meanwhile waited for the fork. Its spares ask again.
  (void)base::sys::RawRequestSlice(base::sys::kBackgroundSliceNs);
  const char* verbose = ::getenv("ZYGO_AGENT_VERBOSE");
  if (verbose != nullptr && *verbose == '1') {
    std::fprintf(stderr, "zygo-agent-python: zygote: filled %lld bytes of allocator holes\n",
                 filled.ok() ? static_cast<long long>(*filled) : -1LL);
  }
  PythonSpareRunner runner(interpreter, function.get(), isolation::PrepareLandlockBase(),
                           verbose != nullptr && *verbose == '1');
  absl::Status served = zygote::RunZygote(channel, runner);
  interpreter.FlushStdio();
  if (!served.ok()) {
    // After Hello the supervisor has the channel; this line is for the sandbox's log.
    std::fprintf(stderr, "zygo-agent-python: zygote: %s\n", served.ToString().c_str());
    ::_exit(1);
  }
  return absl::OkStatus();
}

}  // namespace zygo::agents::python
