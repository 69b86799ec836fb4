// zygo-agent-python: the embedded-CPython zygote agent. Finds the image's libpython, warms
// the interpreter (imports the handler or the preload modules), says Hello on the zygote
// channel and forks a spare per Spawn. With --runtime it is a runtime zygote instead: it
// imports only the --preload modules and forks a function zygote per Spawn
// (runtime_zygote.h). Anything that fails before Hello exits 125 with one summary line on
// stderr (an import error's traceback follows it).
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agents/python/allocator_holes.h"
#include "agents/python/interpreter.h"
#include "agents/python/python_api.h"
#include "agents/python/runtime_zygote.h"
#include "agents/python/warm_function.h"
#include "agents/wire/channel.h"
#include "agents/wire/messages.h"
#include "agents/zygote/zygote.h"
#include "core/base/sys/sched_attr.h"

namespace zygo::agents::python {
namespace {

constexpr int kStartupFailed = 125;
constexpr char kUsage[] =
    "usage: zygo-agent-python [--fd N] (--entry FILE.py:FUNCTION | --pool | --runtime) "
    "[--preload m1,m2] [--code-dir /code]";
// What a runtime zygote calls itself in Hello.
constexpr char kRuntimeKind[] = "python-runtime";

struct Flags {
  int fd = 3;
  std::string entry;
  bool pool = false;
  bool runtime = false;
  std::vector<std::string> preload;
  std::string code_dir = "/code";
};

absl::StatusOr<Flags> ParseFlags(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--pool" || arg == "--runtime") {
      (arg == "--pool" ? flags.pool : flags.runtime) = true;
      continue;
    }
    if (i + 1 >= argc)
      return absl::InvalidArgumentError(absl::StrCat(arg, ": missing value; ", kUsage));
    const std::string value = argv[++i];
    if (arg == "--fd") {
      if (!absl::SimpleAtoi(value, &flags.fd) || flags.fd < 0) {
        return absl::InvalidArgumentError(absl::StrCat("--fd ", value, " is not an fd number"));
      }
    } else if (arg == "--entry") {
      flags.entry = value;
    } else if (arg == "--preload") {
      flags.preload = absl::StrSplit(value, ',', absl::SkipEmpty());
    } else if (arg == "--code-dir") {
      flags.code_dir = value;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag ", arg, "; ", kUsage));
    }
  }
  if (int(flags.pool) + int(flags.runtime) + int(!flags.entry.empty()) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("give exactly one of --entry, --pool and --runtime; ", kUsage));
  }
  return flags;
}

// A runtime zygote: the preload modules, Hello, then a function zygote per Spawn.
absl::Status ServeRuntime(Interpreter& interpreter, const Flags& flags) {
  if (absl::Status status = interpreter.ImportModules(flags.preload); !status.ok()) return status;
  if (absl::Status status = interpreter.FreezeHeap(); !status.ok()) return status;
  // Each function zygote's own objects then start pools of their own (allocator_holes.h).
  (void)FillAllocatorHoles(interpreter.api());
  interpreter.FlushStdio();
  if (absl::Status hello = zygote::SendHello(flags.fd, kRuntimeKind); !hello.ok()) return hello;
  (void)base::sys::RawRequestSlice(base::sys::kBackgroundSliceNs);  // as warm_function.cc
  RuntimeSpareRunner runner(interpreter);
  absl::Status served = zygote::RunZygote(flags.fd, runner);
  if (!served.ok()) {
    std::fprintf(stderr, "zygo-agent-python: runtime zygote: %s\n", served.ToString().c_str());
    ::_exit(1);
  }
  return absl::OkStatus();
}

// Everything up to and including Hello; the zygote then owns the process.
absl::Status Serve(const Flags& flags) {
  if (absl::Status status = zygote::BlockChildSignal(); !status.ok()) return status;
  absl::StatusOr<std::string> library = FindLibpython();
  absl::StatusOr<PythonApi> api =
      library.ok() ? LoadPythonApi(*library) : absl::StatusOr<PythonApi>(library.status());
  if (!api.ok()) {
    return absl::Status(api.status().code(),
                        absl::StrCat("cannot load Python: ", api.status().message()));
  }
  absl::StatusOr<Interpreter> interpreter = Interpreter::Start(*api);
  if (!interpreter.ok()) return interpreter.status();
  if (flags.runtime) return ServeRuntime(*interpreter, flags);
  absl::StatusOr<FunctionEntry> entry =
      MakeFunctionEntry(flags.pool ? "" : flags.entry, flags.code_dir, flags.preload);
  if (!entry.ok()) return entry.status();
  return WarmAndServe(*interpreter, *entry, flags.fd);
}

}  // namespace
}  // namespace zygo::agents::python

int main(int argc, char** argv) {
  using zygo::agents::python::kStartupFailed;
  absl::StatusOr<zygo::agents::python::Flags> flags = zygo::agents::python::ParseFlags(argc, argv);
  absl::Status status = flags.ok() ? zygo::agents::python::Serve(*flags) : flags.status();
  if (!status.ok()) {
    std::fprintf(stderr, "zygo-agent-python: %s\n", std::string(status.message()).c_str());
    return kStartupFailed;
  }
  return 0;
}
