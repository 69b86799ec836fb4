// `zygo mcp`: flags, the pools' start-up, and the stdio loop: lines are read on this
// thread, tools/call runs on a thread of its own, and replies are written whole, one per
// line, under a lock.
#include "cli/mcp_command.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <exception>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cli/mcp_pools.h"
#include "cli/mcp_session.h"
#include "cli/mcp_tools.h"
#include "sdk/cpp/zygo/socket_path.h"

namespace zygo::cli {
namespace {

using mcp::Language;

constexpr char kUsage[] = R"(Usage: zygo mcp [flags]

A Model Context Protocol server on stdin/stdout (JSON-RPC 2.0, one message per line;
MCP revisions 2024-11-05 to 2025-11-25 with their initialize handshake, and 2026-07-28
without one). Add it to an MCP client as a stdio server whose command is `zygo mcp`
(docs/mcp.md). It needs a running supervisor (`zygo serve`); only MCP messages go to
stdout, its own lines to stderr. It exits 0 when stdin ends (after the calls still
running have answered), 125 for bad flags.

Tools:
  run_python      {code, event?}  Python code in a warm Python runtime pool
  run_javascript  {code, event?}  JavaScript (Node) code in a warm Node runtime pool
  call_function   {name, event? | stdin?}  a function registered with `zygo up`
  list_functions  {}  the registered functions and pools
Code may define handler(event), which is called with the event; plain code runs as a
script with `event` bound, and the value of its last expression statement is the
result. Each call runs in a fresh sandboxed process (its own /tmp, the pool's limits,
no network unless --net allows it) and answers with structured content (ok, status,
result, stdout, stderr, error, outcome) and the same as JSON text; a call that failed
has isError true. Arguments that do not fit a tool are a tool error (MCP 2025-11-25;
a JSON-RPC -32602 for clients of earlier revisions); an unknown tool is -32602, an
unknown method -32601, a line that is not JSON -32700.

The pools: zygo mcp registers PREFIX-python and PREFIX-node (runtime pools on the host
image, code run as pool scripts) with the limits below, unless they are registered with
this very spec already; --python-pool/--node-pool use existing pools instead, with
their own limits, image and network, and register nothing.

Flags:
  --socket PATH         the supervisor's socket (default $ZYGO_SOCKET, else
                        /run/zygo/zygo.sock for root, $XDG_RUNTIME_DIR/zygo/zygo.sock
                        or /tmp/zygo-UID/zygo.sock for others)
  --memory SIZE         each call's memory limit (default 256M)
  --timeout DURATION    each call's wall-clock limit (default 30s)
  --pids N              each call's process limit (default 64; a Node call takes 7-11)
  --net none|egress|full
                        the pools' network (default none: loopback only); egress
                        reaches only the --allow entries, full the internet but
                        never private addresses (docs/network.md)
  --allow HOST:PORT     with --net egress, a name calls may reach (repeatable;
                        *.DOMAIN:PORT for a domain's names)
  --code-dir DIR        the directory mounted read-only at /code in the pools
                        (default an empty one: /var/lib/zygo/mcp/code for root, else
                        $XDG_STATE_HOME/zygo/mcp/code)
  --prefix NAME         the pools' names are NAME-python and NAME-node (default mcp)
  --python-pool NAME    run Python in this existing pool instead
  --node-pool NAME      run JavaScript in this existing pool instead
  --max-calls N         tool calls running at once; more are refused (default 32)
  -h, --help            this text
)";

struct Flags {
  std::string socket;
  mcp::PoolOptions pools;
  bool code_dir_given = false;
  int max_calls = 32;
};

absl::Status BadFlag(const std::string& message) {
  return absl::InvalidArgumentError(absl::StrCat(message, " (see zygo mcp --help)"));
}

// What no single flag can check; fills in the code directory's default, made absolute.
absl::Status CheckFlags(Flags& flags) {
  if (!flags.pools.allow.empty() && flags.pools.net_mode != "egress") {
    return BadFlag("--allow needs --net egress");
  }
  if (flags.pools.net_mode == "egress" && flags.pools.allow.empty()) {
    return BadFlag("--net egress needs at least one --allow HOST:PORT");
  }
  if (!flags.code_dir_given) flags.pools.code_dir = mcp::DefaultCodeDir();
  std::error_code error;
  std::filesystem::path absolute = std::filesystem::absolute(flags.pools.code_dir, error);
  if (!error) flags.pools.code_dir = absolute.lexically_normal().string();
  return absl::OkStatus();
}

// Returns the flags, or an error; sets *help for -h.
absl::StatusOr<Flags> ParseFlags(int argc, char** argv, bool* help) {
  Flags flags;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i], value;
    if (arg == "-h" || arg == "--help") {
      *help = true;
      return flags;
    }
    if (size_t eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    } else if (arg.rfind("--", 0) == 0 && i + 1 < argc) {
      value = argv[++i];
    } else {
      return BadFlag(arg.rfind("-", 0) == 0 ? absl::StrCat(arg, " needs a value or is unknown")
                                            : absl::StrCat("unexpected argument ", arg));
    }
    if (arg == "--socket") {
      flags.socket = value;
    } else if (arg == "--memory") {
      flags.pools.memory = value;
    } else if (arg == "--timeout") {
      flags.pools.timeout = value;
    } else if (arg == "--pids") {
      if (!absl::SimpleAtoi(value, &flags.pools.pids) || flags.pools.pids < 1) {
        return BadFlag(absl::StrCat("--pids: \"", value, "\" is not a positive number"));
      }
    } else if (arg == "--net") {
      if (value != "none" && value != "egress" && value != "full") {
        return BadFlag(absl::StrCat("--net: \"", value, "\" is not none, egress or full"));
      }
      flags.pools.net_mode = value;
    } else if (arg == "--allow") {
      flags.pools.allow.push_back(value);
    } else if (arg == "--code-dir") {
      flags.pools.code_dir = value;
      flags.code_dir_given = true;
    } else if (arg == "--prefix") {
      flags.pools.prefix = value;
    } else if (arg == "--python-pool") {
      flags.pools.python_pool = value;
    } else if (arg == "--node-pool") {
      flags.pools.node_pool = value;
    } else if (arg == "--max-calls") {
      if (!absl::SimpleAtoi(value, &flags.max_calls) || flags.max_calls < 1) {
        return BadFlag(absl::StrCat("--max-calls: \"", value, "\" is not a positive number"));
      }
    } else {
      return BadFlag(absl::StrCat("unknown flag ", arg));
    }
  }
  if (absl::Status checked = CheckFlags(flags); !checked.ok()) return checked;
  return flags;
}

// Replies go out whole, one per line, whichever thread made them.
class Output {
 public:
  void Write(const std::string& line) {
    std::lock_guard<std::mutex> lock(mu_);
    std::string framed = line + "\n";
    const char* data = framed.data();
    size_t left = framed.size();
    while (left > 0) {
      ssize_t n = write(STDOUT_FILENO, data, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;  // the client went away; its replies have nowhere to go
      data += n;
      left -= static_cast<size_t>(n);
    }
  }

 private:
  std::mutex mu_;
};

// Counts the tool calls running on their own threads, so stdin's end waits for them.
class InFlight {
 public:
  explicit InFlight(int limit) : limit_(limit) {}
  bool TryAdd() {
    std::lock_guard<std::mutex> lock(mu_);
    if (running_ >= limit_) return false;
    ++running_;
    return true;
  }
  void Done() {
    std::lock_guard<std::mutex> lock(mu_);
    --running_;
    idle_.notify_all();
  }
  void WaitIdle() {
    std::unique_lock<std::mutex> lock(mu_);
    idle_.wait(lock, [&] { return running_ == 0; });
  }

 private:
  const int limit_;
  std::mutex mu_;
  std::condition_variable idle_;
  int running_ = 0;
};

// At start, off the loop: registers the pools and says on stderr whether each warmed, so
// the operator sees a broken setup before the first call.
void StartPools(mcp::PoolKeeper* pools) {
  for (Language language : {Language::kPython, Language::kJavaScript}) {
    const std::string& name = pools->Name(language);
    absl::Status status;
    try {
      status = pools->Ensure(language);
      if (status.ok()) status = pools->WaitWarm(language, absl::Seconds(60));
    } catch (const std::exception& error) {  // a reply of the supervisor's it cannot read
      status = absl::InternalError(error.what());
    }
    if (status.ok()) {
      fprintf(stderr, "zygo mcp: pool %s is warm\n", name.c_str());
    } else {
      fprintf(stderr, "zygo mcp: pool %s: %s\n", name.c_str(),
              std::string(status.message()).c_str());
    }
  }
}

// Runs a tools/call on a thread of its own; a call past --max-calls is answered at once.
void Launch(mcp::DeferredCall call, mcp::McpSession& session, Output& output,
            InFlight& in_flight, int max_calls) {
  if (!in_flight.TryAdd()) {
    session.Finish(call.id);
    output.Write(session.BusyReply(
        call.id, absl::StrCat("Server busy: ", max_calls,
                              " tool calls are running already (zygo mcp --max-calls)")));
    return;
  }
  auto run = [call = std::move(call), &session, &output, &in_flight]() {
    std::string reply;
    try {
      reply = call.run();
    } catch (const std::exception& error) {
      reply = mcp::ErrorLine(call.id, mcp::kInternalError,
                             absl::StrCat("Internal error: ", error.what()));
    }
    if (session.Finish(call.id)) output.Write(reply);
    in_flight.Done();
  };
  try {
    std::thread(std::move(run)).detach();
  } catch (const std::system_error& error) {
    in_flight.Done();
    session.Finish(call.id);
    output.Write(session.BusyReply(call.id, absl::StrCat("Server busy: ", error.what())));
  }
}

// Lines longer than this (a 16 MiB event, JSON-escaped, fits) are refused, unread.
constexpr size_t kMaxLine = 64 << 20;

void Serve(mcp::McpSession& session, Output& output, InFlight& in_flight, int max_calls) {
  std::string pending;
  bool skipping = false;  // inside a line over kMaxLine, until its newline
  char buffer[1 << 16];
  auto handle = [&](const std::string& line) {
    mcp::Step step;
    try {
      step = session.HandleLine(line);
    } catch (const std::exception& error) {
      step.reply = mcp::ErrorLine(nullptr, mcp::kInternalError,
                                  absl::StrCat("Internal error: ", error.what()));
    }
    if (step.reply) output.Write(*step.reply);
    if (step.deferred) Launch(std::move(*step.deferred), session, output, in_flight, max_calls);
  };
  while (true) {
    ssize_t n = read(STDIN_FILENO, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    size_t start = 0;
    for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
      if (buffer[i] != '\n') continue;
      if (!skipping) {
        pending.append(buffer + start, i - start);
        handle(pending);
      }
      pending.clear();
      skipping = false;
      start = i + 1;
    }
    if (!skipping) pending.append(buffer + start, n - start);
    if (pending.size() > kMaxLine) {
      output.Write(mcp::ErrorLine(nullptr, mcp::kInvalidRequest,
                                  absl::StrCat("Invalid Request: a message over ", kMaxLine,
                                               " bytes")));
      pending.clear();
      skipping = true;
    }
  }
  if (!skipping && !pending.empty()) handle(pending);  // a last line without its newline
}

}  // namespace

int McpCommand(int argc, char** argv) {
  bool help = false;
  absl::StatusOr<Flags> flags = ParseFlags(argc, argv, &help);
  if (help) {
    fputs(kUsage, stdout);
    return 0;
  }
  if (!flags.ok()) {
    fprintf(stderr, "zygo mcp: %s\n", std::string(flags.status().message()).c_str());
    return 125;
  }
  // A client that hangs up must not kill a call's thread mid-write.
  signal(SIGPIPE, SIG_IGN);
  const std::string socket = sdk::ResolveSocketPath(flags->socket);
  if (!flags->code_dir_given) {
    std::error_code error;
    std::filesystem::create_directories(flags->pools.code_dir, error);
    if (error) {
      fprintf(stderr, "zygo mcp: cannot make %s: %s (give --code-dir)\n",
              flags->pools.code_dir.c_str(), error.message().c_str());
    }
  }
  // Never freed: the start-up thread may still use it when the process ends.
  auto* pools = new mcp::PoolKeeper(socket, flags->pools);
  const mcp::PoolOptions& options = flags->pools;
  mcp::SupervisorTools tools(
      socket, *pools,
      options.net_mode != "none" || !options.python_pool.empty() || !options.node_pool.empty());
  mcp::ServerInfo info;
  info.version = "0.1.0";
  info.instructions =
      "Zygo runs code in sandboxes. run_python and run_javascript run code in a fresh "
      "sandboxed process each call (milliseconds, nothing kept between calls, no network "
      "unless the operator allowed it); print what you want to see, or end with an "
      "expression to get its value as `result`. call_function and list_functions reach "
      "functions registered with the Zygo supervisor.";
  mcp::McpSession session(tools, info);
  Output output;
  InFlight in_flight(flags->max_calls);
  fprintf(stderr, "zygo mcp: serving MCP on stdio; supervisor at %s; pools %s and %s\n",
          socket.c_str(), pools->Name(Language::kPython).c_str(),
          pools->Name(Language::kJavaScript).c_str());
  std::thread(StartPools, pools).detach();
  Serve(session, output, in_flight, flags->max_calls);
  in_flight.WaitIdle();
  // The start-up thread may still be waiting for a pool; nothing of it needs to finish.
  fflush(stderr);
  _exit(0);
}

}  // namespace zygo::cli
