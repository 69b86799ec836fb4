// What makes a zygote of one function (or one runtime pool) out of a started interpreter:
// its code dir on sys.path, its preload modules, its handler imported, the heap frozen,
// Hello, then the zygote loop. The same for an agent started for one function and for a
// function zygote forked by a runtime zygote (runtime_zygote.h).
#ifndef ZYGO_AGENTS_PYTHON_WARM_FUNCTION_H_
#define ZYGO_AGENTS_PYTHON_WARM_FUNCTION_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agents/python/interpreter.h"

namespace zygo::agents::python {

struct FunctionEntry {
  std::string code_dir = "/code";
  bool pool = false;
  std::string file;  // function mode: absolute (resolved against code_dir)
  std::string function;
  std::vector<std::string> preload;
};

// `entry` is "FILE.py:FUNCTION" (FILE relative to `code_dir` unless absolute), or empty
// for a runtime pool.
absl::StatusOr<FunctionEntry> MakeFunctionEntry(const std::string& entry,
                                                const std::string& code_dir,
                                                std::vector<std::string> preload);

// Imports the function and says Hello on `channel`; an error before Hello is the agent's
// start-up failure (exit 125, the summary line first). After Hello it serves the zygote
// channel until the supervisor hangs up, and a failure there ends the process (exit 1).
absl::Status WarmAndServe(Interpreter& interpreter, const FunctionEntry& entry, int channel);

}  // namespace zygo::agents::python

#endif  // ZYGO_AGENTS_PYTHON_WARM_FUNCTION_H_
