// The agents the conformance suite runs, each with a handler written in its language that
// implements the same small set of operations, chosen by the event:
//   any event without "op"         -> returns the event unchanged
//   {"op": "print"}                -> writes "hello from the handler" to stdout and
//                                     "to stderr" to stderr; returns "printed"
//   {"op": "raise"}                -> divides by zero on the line marked RAISE_LINE
//   {"op": "set"}                  -> returns a value JSON cannot carry (a set)
//   {"op": "random"}               -> {"random": <float>, "uuid": <uuid4 text>}
//   {"op": "tmpdir"}               -> {"gettempdir", "environ", "c_environ" (TMPDIR as a
//                                     subprocess sees it), "listing" (of that dir)}
//   {"op": "write", "path": P}     -> creates P; returns "written" (or raises)
//   {"op": "kill", "pid": N, "signal": S} -> sends S to N; returns "sent" (or raises)
//   {"op": "exit", "code": C}      -> exits at once with status C, reporting nothing
//   {"op": "measure", "blob": S}   -> {"length": len(S), "crc32": zlib's CRC-32 of S as
//                                     UTF-8, "event_fd_open": whether the process holds
//                                     an fd of an event memfd}
// and, for pool mode, scripts whose handler(event) returns {"doubled": event["x"] * 2}
// or raises on the line marked RAISE_LINE.
#ifndef ZYGO_AGENTS_CONFORMANCE_AGENT_KINDS_H_
#define ZYGO_AGENTS_CONFORMANCE_AGENT_KINDS_H_

#include <ostream>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "agents/conformance/agent_process.h"

namespace zygo::agents::conformance {

// A Python traceback's frame: `File "/dir/handler.py", line 12`.
std::string PythonFrameAt(const std::string& file, int line);

struct AgentKind {
  std::string name;  // the test's name for it, and Hello's agent_kind unless hello_kind says

  std::string handler_file;
  std::string handler_source;
  std::string pool_script;
  std::string pool_script_raising;
  // The command for function mode with the handler file in `dir`, and for pool mode.
  AgentCommand (*function_mode)(const std::string& dir);
  AgentCommand (*pool_mode)(const std::string& dir);
  std::string hello_kind;  // Hello's agent_kind when it is not `name`
  // A pool script's file name is its entry and this.
  std::string script_extension = ".py";
  // How a traceback names line `line` of `file`.
  std::string (*frame_at)(const std::string& file, int line) = PythonFrameAt;
  // A word of the ResultError's message for the handler's unencodable value.
  std::string unencodable = "set";
  // Whether JSON numbers become IEEE doubles in the handler's language (JavaScript's
  // JSON.parse), so 3.0 comes back as 3 and integers past 2^53 are rounded.
  bool numbers_are_doubles = false;
  // Whether the agent answers report_touched with Touched (optional in the protocol).
  bool reports_touched = true;
  // Whether a pool child sends Compiled (optional in the protocol).
  bool compiles_scripts = true;
  // How long after a spare's Pong it is ready for a request's fastest path, and how many
  // requests the latency test times (half as many again in a burst).
  absl::Duration settle = absl::Milliseconds(40);
  int latency_requests = 200;
};

inline std::ostream& operator<<(std::ostream& out, const AgentKind& kind) {
  return out << kind.name;
}

// Every agent under test.
std::vector<AgentKind> AllAgentKinds();
AgentKind NodeAgentKind();          // node_kind.cc
AgentKind NodeSnapshotAgentKind();  // the same, its workers started from a snapshot

// The 1-based line of `source` that contains `marker`, or 0.
int LineOf(const std::string& source, const std::string& marker);

}  // namespace zygo::agents::conformance

#endif  // ZYGO_AGENTS_CONFORMANCE_AGENT_KINDS_H_
