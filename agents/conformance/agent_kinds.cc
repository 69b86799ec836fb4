// The Python agent's entry in the conformance suite, and the list of every agent's.
#include "agents/conformance/agent_kinds.h"

#include <limits.h>
#include <stdlib.h>

#include <sstream>

#include "absl/strings/str_cat.h"

namespace zygo::agents::conformance {
namespace {

constexpr char kPythonHandler[] = R"py(import os
import random
import signal
import subprocess
import sys
import tempfile
import uuid
import zlib


def handle(event):
    if not isinstance(event, dict) or "op" not in event:
        return event
    op = event["op"]
    if op == "print":
        print("hello from the handler")
        print("to stderr", file=sys.stderr)
        return "printed"
    if op == "raise":
        return 1 / 0  # RAISE_LINE
    if op == "set":
        return {1, 2}
    if op == "random":
        return {"random": random.random(), "uuid": str(uuid.uuid4())}
    if op == "tmpdir":
        tmp = tempfile.gettempdir()
        shell = subprocess.run(["/bin/sh", "-c", 'printf %s "$TMPDIR"'],
                               capture_output=True, check=True)
        return {"gettempdir": tmp, "environ": os.environ["TMPDIR"],
                "c_environ": shell.stdout.decode(), "listing": sorted(os.listdir(tmp))}
    if op == "write":
        with open(event["path"], "w") as f:
            f.write("x")
        return "written"
    if op == "kill":
        os.kill(event["pid"], event["signal"])
        return "sent"
    if op == "exit":
        os._exit(event["code"])
    if op == "measure":
        fds = os.listdir("/proc/self/fd")
        links = [os.readlink("/proc/self/fd/" + fd) for fd in fds if os.path.exists("/proc/self/fd/" + fd)]
        return {"length": len(event["blob"]), "crc32": zlib.crc32(event["blob"].encode()),
                "event_fd_open": any("zygo-event" in link for link in links)}
    raise ValueError("unknown op " + op)
)py";

constexpr char kPythonPoolScript[] = R"py(def handler(event):
    return {"doubled": event["x"] * 2}
)py";

constexpr char kPythonPoolScriptRaising[] = R"py(def handler(event):
    raise KeyError("no such thing")  # RAISE_LINE
)py";

// The agent built next to this test (a data dependency), found through the runfiles tree
// the test runs in.
std::string PythonAgentBinary() {
  char resolved[PATH_MAX];
  const char* relative = "agents/python/zygo-agent-python";
  return ::realpath(relative, resolved) != nullptr ? resolved : relative;
}

AgentCommand PythonFunctionMode(const std::string& dir) {
  // No ZYGO_LIBPYTHON: the agent must find the host's libpython by its own search.
  return {PythonAgentBinary(),
          {"--fd", "3", "--entry", "handler.py:handle", "--code-dir", dir, "--preload", "uuid"},
          {},
          {"ZYGO_LIBPYTHON", "PYTHONPATH", "PYTHONHOME"}};
}

AgentCommand PythonPoolMode(const std::string& dir) {
  return {PythonAgentBinary(),
          {"--pool", "--code-dir", dir, "--preload", "json,uuid"},
          {},
          {"ZYGO_LIBPYTHON", "PYTHONPATH", "PYTHONHOME"}};
}

}  // namespace

std::string PythonFrameAt(const std::string& file, int line) {
  return absl::StrCat(file, "\", line ", line);
}

std::vector<AgentKind> AllAgentKinds() {
  return {AgentKind{"python", "handler.py", kPythonHandler, kPythonPoolScript,
                    kPythonPoolScriptRaising, PythonFunctionMode, PythonPoolMode},
          NodeAgentKind(), NodeSnapshotAgentKind()};
}

int LineOf(const std::string& source, const std::string& marker) {
  std::istringstream lines(source);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    if (line.find(marker) != std::string::npos) return number;
  }
  return 0;
}

}  // namespace zygo::agents::conformance
