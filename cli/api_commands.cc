// `zygo up/down/ls/exec/scripts`: parse the flags, make one API call, print the answer.
#include "cli/api_commands.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cli/exec_output.h"
#include "sdk/cpp/zygo/api_client.h"
#include "sdk/cpp/zygo/client.h"
#include "sdk/cpp/zygo/socket_path.h"

namespace zygo::cli {
namespace {

using nlohmann::json;
using sdk::ApiClient;

constexpr char kSocketHelp[] =
    "  --socket PATH    the supervisor's socket (default $ZYGO_SOCKET, else\n"
    "                   /run/zygo/zygo.sock for root, $XDG_RUNTIME_DIR/zygo/zygo.sock or\n"
    "                   /tmp/zygo-UID/zygo.sock for others)\n";

int Fail(const absl::Status& status) {
  fprintf(stderr, "zygo: %s\n", std::string(status.message()).c_str());
  return kExitZygoFailed;
}

// One command's arguments: positionals ("-" among them), flags with a value, switches.
struct Args {
  std::vector<std::string> positional;
  std::map<std::string, std::string> values;
  std::set<std::string> switches;
  bool help = false;
};

absl::StatusOr<Args> ParseArgs(const char* command, int argc, char** argv,
                               const std::set<std::string>& value_flags,
                               const std::set<std::string>& switch_flags) {
  Args args;
  bool flags_done = false;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    if (flags_done || arg == "-" || arg.empty() || arg[0] != '-') {
      args.positional.push_back(arg);
      continue;
    }
    if (arg == "--") {
      flags_done = true;
    } else if (arg == "-h" || arg == "--help") {
      args.help = true;
    } else if (switch_flags.count(arg) > 0) {
      args.switches.insert(arg);
    } else if (size_t eq = arg.find('=');
               eq != std::string::npos && value_flags.count(arg.substr(0, eq)) > 0) {
      args.values[arg.substr(0, eq)] = arg.substr(eq + 1);
    } else if (value_flags.count(arg) > 0) {
      if (i + 1 >= argc) {
        return absl::InvalidArgumentError(
            absl::StrCat(arg, " needs a value (see zygo ", command, " --help)"));
      }
      args.values[arg] = argv[++i];
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag ", arg, " for zygo ", command,
                                                     " (see zygo ", command, " --help)"));
    }
  }
  return args;
}

absl::Status WrongArguments(const char* usage_line) {
  return absl::InvalidArgumentError(absl::StrCat("usage: ", usage_line));
}

std::string SocketOf(const Args& args) {
  auto it = args.values.find("--socket");
  return sdk::ResolveSocketPath(it != args.values.end() ? it->second : "");
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    return absl::InvalidArgumentError(absl::StrCat("cannot read ", path, ": ", strerror(errno)));
  }
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

absl::StatusOr<std::string> ReadStdin() {
  std::string data;
  char buffer[65536];
  for (;;) {
    ssize_t n = read(STDIN_FILENO, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::InvalidArgumentError(absl::StrCat("reading stdin: ", strerror(errno)));
    if (n == 0) return data;
    data.append(buffer, n);
  }
}

std::string Text(const json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return "";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

bool IsTrue(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_boolean() && it->get<bool>();
}

// --- up ---------------------------------------------------------------------------------

constexpr char kUpUsage[] = R"(Usage: zygo up [--socket PATH] [--no-wait] SPEC.toml

Registers the function SPEC.toml describes with the supervisor (replacing one of the
same name) and waits until it is warm: its image pulled when it is not in the store (as
the spec's `pull` says; the pull's progress on stderr), its zygote started. Exits 125
with the reason when it cannot warm. Relative paths in the spec are resolved against the
directory SPEC.toml is in.

What runs (the spec's runtime and entry; docs/function-spec.md has every field):
  python   entry = "FILE.py:FUNCTION", called in a fork of a warm interpreter
  node     entry = "FILE.js:FUNCTION" (or .mjs, .cjs; CommonJS or an ES module, async
           awaited), each request in a fresh node worker started ahead of demand in its
           own cgroup; node is the first on the image's PATH, and an image without one
           is refused here
  exec     entry = a command, with the request's body on its stdin
  pool = true (python, node) takes no entry: scripts come from `zygo scripts put`

Flags:
  --no-wait        return once it is registered; it warms in the background
)";

// A warm-up that pulls a large image may take minutes; past this, up gives up waiting.
constexpr absl::Duration kUpWaitLimit = absl::Minutes(15);
constexpr absl::Duration kUpPollInterval = absl::Milliseconds(100);

// Polls the supervisor until `name` has warmed once (OK) or says why it cannot; prints
// each new line of its image's pull on stderr meanwhile.
absl::Status WaitUntilWarm(sdk::Client& client, const std::string& name) {
  const absl::Time deadline = absl::Now() + kUpWaitLimit;
  std::string shown;
  while (absl::Now() < deadline) {
    absl::StatusOr<std::vector<sdk::Function>> list = client.List();
    if (!list.ok()) return list.status();
    const auto found = std::find_if(list->begin(), list->end(),
                                    [&](const sdk::Function& f) { return f.name == name; });
    if (found == list->end()) {
      return absl::NotFoundError(absl::StrCat(name, " was removed while it warmed"));
    }
    if (!found->progress.empty() && found->progress != shown) {
      fprintf(stderr, "%s\n", found->progress.c_str());
      shown = found->progress;
    }
    if (found->warm_ups > 0 || found->state == "warm") return absl::OkStatus();
    if (found->state != "warming" && !found->error.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat(name, " is registered but cannot warm: ", found->error));
    }
    absl::SleepFor(kUpPollInterval);
  }
  return absl::DeadlineExceededError(absl::StrCat(name, " is registered but did not warm within ",
                                                  absl::FormatDuration(kUpWaitLimit),
                                                  "; `zygo ls` shows its state"));
}

}  // namespace

int UpCommand(int argc, char** argv) {
  absl::StatusOr<Args> args = ParseArgs("up", argc, argv, {"--socket"}, {"--no-wait"});
  if (!args.ok()) return Fail(args.status());
  if (args->help) {
    printf("%s%s", kUpUsage, kSocketHelp);
    return 0;
  }
  if (args->positional.size() != 1) return Fail(WrongArguments("zygo up SPEC.toml"));
  sdk::Client client(SocketOf(*args));
  absl::StatusOr<sdk::Function> info = client.UpFile(args->positional[0]);
  if (!info.ok()) return Fail(info.status());
  if (args->switches.count("--no-wait") == 0) {
    if (absl::Status warm = WaitUntilWarm(client, info->name); !warm.ok()) return Fail(warm);
  }
  printf("%s is up (runtime %s, image %s%s)\n", info->name.c_str(), info->runtime.c_str(),
         info->image.c_str(), info->pool ? ", a runtime pool" : "");
  return 0;
}

namespace {

constexpr char kDownUsage[] = R"(Usage: zygo down [--socket PATH] NAME

Removes the function (or runtime pool) NAME from the supervisor and stops its zygote.

Flags:
)";

constexpr char kLsUsage[] = R"usage(Usage: zygo ls [--socket PATH] [--json]

Lists the supervisor's functions and runtime pools: NAME RUNTIME IMAGE STATE REQUESTS ENTRY
(a runtime pool's ENTRY is "(pool)"; STATE is cold, warming, warm, or failed when its last
warm-up failed, whose reason then follows the table on stderr).

Flags:
  --json           the API's reply instead: {"functions":[{name, image, runtime, entry,
                   pool, state, requests, memory_bytes, timeout_ms, cold_after_ms,
                   spec_path}]}
)usage";

void PrintTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()));
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(widths[i] - row[i].size() + 3, ' ');
    }
    puts(line.c_str());
  }
}

}  // namespace

int DownCommand(int argc, char** argv) {
  absl::StatusOr<Args> args = ParseArgs("down", argc, argv, {"--socket"}, {});
  if (!args.ok()) return Fail(args.status());
  if (args->help) {
    printf("%s%s", kDownUsage, kSocketHelp);
    return 0;
  }
  if (args->positional.size() != 1) return Fail(WrongArguments("zygo down NAME"));
  const std::string& name = args->positional[0];
  sdk::Client client(SocketOf(*args));
  if (absl::Status down = client.Down(name); !down.ok()) return Fail(down);
  printf("%s is down\n", name.c_str());
  return 0;
}

int LsCommand(int argc, char** argv) {
  absl::StatusOr<Args> args = ParseArgs("ls", argc, argv, {"--socket"}, {"--json"});
  if (!args.ok()) return Fail(args.status());
  if (args->help) {
    printf("%s%s", kLsUsage, kSocketHelp);
    return 0;
  }
  if (!args->positional.empty()) return Fail(WrongArguments("zygo ls [--json]"));
  ApiClient client(SocketOf(*args));
  absl::StatusOr<json> reply = client.Call({"GET", "/v1/functions", "", ""});
  if (!reply.ok()) return Fail(reply.status());
  auto functions = reply->find("functions");
  if (functions == reply->end() || !functions->is_array()) {
    return Fail(absl::InternalError("the supervisor's function list has no \"functions\" array"));
  }
  if (args->switches.count("--json") > 0) {
    puts(reply->dump().c_str());
    return 0;
  }
  std::vector<std::vector<std::string>> rows = {
      {"NAME", "RUNTIME", "IMAGE", "STATE", "REQUESTS", "ENTRY"}};
  std::vector<std::string> failures;
  for (const json& function : *functions) {
    bool pool = IsTrue(function, "pool");
    std::string state = Text(function, "state");
    const std::string error = Text(function, "error");
    if (state == "cold" && !error.empty()) {
      state = "failed";
      failures.push_back(absl::StrCat(Text(function, "name"), " cannot warm: ", error));
    }
    rows.push_back({Text(function, "name"), Text(function, "runtime"), Text(function, "image"),
                    state, Text(function, "requests"), pool ? "(pool)" : Text(function, "entry")});
  }
  PrintTable(rows);
  fflush(stdout);
  for (const std::string& failure : failures) fprintf(stderr, "zygo: %s\n", failure.c_str());
  return 0;
}

namespace {

constexpr char kExecUsage[] = R"(Usage: zygo exec [flags] NAME [-]

Runs one request on the warm function (or runtime pool) NAME.

The event is null, or the JSON given with --data, or, with `-`, whatever stdin holds. An
exec function (runtime "exec") gets those bytes as its stdin (none by default).

Output: what the request wrote to stdout and stderr, copied to zygo's own, then the
handler's return value as one line of JSON on stdout (nothing when it returned None or,
in JavaScript, undefined or null).

Exit code: 0 when it succeeded; 1 when the handler raised (the traceback and
"error: Type: message" go to stderr); an exec function's own exit code; 137 when it was
killed for its timeout or memory limit (zygo says which); 128+N when signal N killed it;
125 when Zygo itself failed (supervisor unreachable, unknown function, bad input).

Flags:
  --data JSON      the event (default: null)
  -                read the event (or an exec function's stdin) from stdin
  --script DIGEST  a runtime pool's script, from `zygo scripts put`
  --json           print the whole reply instead: {ok, result, error, stdout, stderr,
                   stdout_truncated, stderr_truncated, outcome, timings_us}
)";

// The request body and its type, from --data or stdin.
absl::Status ReadEvent(const Args& args, std::string* body, std::string* content_type) {
  auto data = args.values.find("--data");
  bool from_stdin = args.positional.size() == 2;
  if (from_stdin && data != args.values.end()) {
    return absl::InvalidArgumentError("give the event with --data or `-`, not both");
  }
  if (data != args.values.end()) {
    *body = data->second;
    *content_type = "application/json";
  } else if (from_stdin) {
    absl::StatusOr<std::string> input = ReadStdin();
    if (!input.ok()) return input.status();
    *body = std::move(*input);
    // JSON for a python function, raw stdin for an exec one: the supervisor knows which.
    *content_type = "application/octet-stream";
  }
  return absl::OkStatus();
}

}  // namespace

int ExecCommand(int argc, char** argv) {
  absl::StatusOr<Args> args =
      ParseArgs("exec", argc, argv, {"--socket", "--data", "--script"}, {"--json"});
  if (!args.ok()) return Fail(args.status());
  if (args->help) {
    printf("%s%s", kExecUsage, kSocketHelp);
    return 0;
  }
  bool shape_ok =
      args->positional.size() == 1 || (args->positional.size() == 2 && args->positional[1] == "-");
  if (!shape_ok || args->positional[0] == "-") {
    return Fail(WrongArguments("zygo exec NAME [--data JSON | -] [--script DIGEST] [--json]"));
  }
  const std::string& name = args->positional[0];
  std::string body, content_type;
  if (absl::Status read = ReadEvent(*args, &body, &content_type); !read.ok()) return Fail(read);
  std::string path = absl::StrCat("/v1/functions/", ApiClient::Escape(name), "/exec");
  if (auto script = args->values.find("--script"); script != args->values.end()) {
    absl::StrAppend(&path, "?script=", ApiClient::Escape(script->second));
  }
  ApiClient client(SocketOf(*args));
  absl::StatusOr<json> reply = client.Call({"POST", path, body, content_type});
  if (!reply.ok()) return Fail(reply.status());
  return PrintExecReply(*reply, name, args->switches.count("--json") > 0, stdout, stderr);
}

namespace {

constexpr char kScriptsUsage[] = R"(Usage: zygo scripts put [--socket PATH] FILE

Stores FILE (or stdin, for `-`) as a runtime-pool script and prints its digest
("sha256:..."), which `zygo exec POOL --script DIGEST` runs.

Flags:
)";

}  // namespace

int ScriptsCommand(int argc, char** argv) {
  absl::StatusOr<Args> args = ParseArgs("scripts", argc, argv, {"--socket"}, {});
  if (!args.ok()) return Fail(args.status());
  if (args->help) {
    printf("%s%s", kScriptsUsage, kSocketHelp);
    return 0;
  }
  if (args->positional.size() != 2 || args->positional[0] != "put") {
    return Fail(WrongArguments("zygo scripts put FILE"));
  }
  const std::string& file = args->positional[1];
  absl::StatusOr<std::string> source = file == "-" ? ReadStdin() : ReadFile(file);
  if (!source.ok()) return Fail(source.status());
  ApiClient client(SocketOf(*args));
  absl::StatusOr<json> reply =
      client.Call({"PUT", "/v1/scripts", *source, "text/plain; charset=utf-8"});
  if (!reply.ok()) return Fail(reply.status());
  std::string digest = Text(*reply, "digest");
  if (digest.empty()) return Fail(absl::InternalError("the supervisor's reply has no digest"));
  puts(digest.c_str());
  return 0;
}

}  // namespace zygo::cli
