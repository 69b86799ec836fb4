// zygo-agent-python: the embedded-CPython zygote agent. Finds the image's libpython, warms
// the interpreter (imports the handler or the preload modules), says Hello on the zygote
// channel and forks a spare per Spawn. Anything that fails before Hello exits 125 with one
// summary line on stderr (an import error's traceback follows it).
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agents/isolation/isolation.h"
#include "agents/python/interpreter.h"
#include "agents/python/python_api.h"
#include "agents/python/spare.h"
#include "agents/wire/channel.h"
#include "agents/wire/messages.h"
#include "agents/zygote/zygote.h"
#include "core/base/sys/sched_attr.h"

namespace zygo::agents::python {
namespace {

constexpr int kStartupFailed = 125;
constexpr char kUsage[] =
    "usage: zygo-agent-python [--fd N] (--entry FILE.py:FUNCTION | --pool) [--preload m1,m2] "
    "[--code-dir /code]";

struct Flags {
  int fd = 3;
  std::string entry_file;  // Function mode: resolved against code_dir when relative.
  std::string entry_function;
  bool pool = false;
  std::vector<std::string> preload;
  std::string code_dir = "/code";
};

absl::StatusOr<Flags> ParseFlags(int argc, char** argv) {
  Flags flags;
  std::string entry;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--pool") {
      flags.pool = true;
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
      entry = value;
    } else if (arg == "--preload") {
      flags.preload = absl::StrSplit(value, ',', absl::SkipEmpty());
    } else if (arg == "--code-dir") {
      flags.code_dir = value;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag ", arg, "; ", kUsage));
    }
  }
  if (flags.pool == !entry.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("give exactly one of --entry and --pool; ", kUsage));
  }
  if (!flags.pool) {
    const size_t colon = entry.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == entry.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--entry ", entry, " is not FILE.py:FUNCTION"));
    }
    flags.entry_file = entry.substr(0, colon);
    flags.entry_function = entry.substr(colon + 1);
    if (flags.entry_file[0] != '/')
      flags.entry_file = absl::StrCat(flags.code_dir, "/", flags.entry_file);
  }
  return flags;
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
  if (absl::Status status = interpreter->PrependSysPath(flags.code_dir); !status.ok())
    return status;
  if (absl::Status status = interpreter->ImportModules(flags.preload); !status.ok()) return status;
  PyRef function;
  if (!flags.pool) {
    absl::StatusOr<PyRef> imported =
        interpreter->ImportFunction(flags.entry_file, flags.entry_function);
    if (!imported.ok()) return imported.status();
    function = std::move(*imported);
  }
  if (absl::Status status = interpreter->FreezeHeap(); !status.ok()) return status;
  interpreter->FlushStdio();
  absl::StatusOr<wire::Frame> hello =
      wire::Encode(wire::HelloMessage{"python", wire::kProtocolVersion, ::getpid()});
  if (!hello.ok()) return hello.status();
  if (absl::Status status = wire::SendFrame(flags.fd, *hello, {}); !status.ok()) {
    return absl::Status(status.code(),
                        absl::StrCat("Hello on fd ", flags.fd, ": ", status.message()));
  }
  // The supervisor's short scheduler slice (inherited) is for the request path; the
  // zygote's forks are background work: with the short slice they preempted running
  // requests (a 1 ms fork in the middle of a 0.08 ms request, traced), with the default
  // one a caller's client woken meanwhile waited for the fork. Its spares ask again.
  (void)base::sys::RawRequestSlice(base::sys::kBackgroundSliceNs);
  const char* verbose = ::getenv("ZYGO_AGENT_VERBOSE");
  PythonSpareRunner runner(*interpreter, function.get(), isolation::PrepareLandlockBase(),
                           verbose != nullptr && *verbose == '1');
  absl::Status served = zygote::RunZygote(flags.fd, runner);
  interpreter->FlushStdio();
  if (!served.ok()) {
    // After Hello the supervisor has the channel; this line is for the sandbox's log.
    std::fprintf(stderr, "zygo-agent-python: zygote: %s\n", served.ToString().c_str());
    ::_exit(1);
  }
  return absl::OkStatus();
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
