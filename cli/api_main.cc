// `zygo-api`: the supervisor's client commands (up, down, ls, exec, scripts), which need
// libcurl and so live outside the static `zygo`; `zygo` execs this for them. Exit codes:
// the command's own (see each --help), or 125 with one line naming the problem.
#include <stdio.h>
#include <string.h>

#include "cli/api_commands.h"

namespace {

constexpr char kUsage[] = R"(Usage: zygo-api COMMAND [ARGS...] (run as `zygo COMMAND`)

Commands:
  up       register a function from its TOML spec: zygo up SPEC.toml
  down     remove a function: zygo down NAME
  ls       list the functions and their state
  exec     run one request on a warm function: zygo exec NAME [--data JSON | -]
  scripts  store a runtime-pool script: zygo scripts put FILE

Each takes --socket PATH and --help.
)";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fputs(kUsage, stderr);
    return 125;
  }
  const char* command = argv[1];
  if (strcmp(command, "-h") == 0 || strcmp(command, "--help") == 0) {
    fputs(kUsage, stdout);
    return 0;
  }
  struct Entry {
    const char* name;
    int (*run)(int, char**);
  };
  static constexpr Entry kCommands[] = {
      {"up", &zygo::cli::UpCommand},           {"down", &zygo::cli::DownCommand},
      {"ls", &zygo::cli::LsCommand},           {"exec", &zygo::cli::ExecCommand},
      {"scripts", &zygo::cli::ScriptsCommand},
  };
  for (const Entry& entry : kCommands) {
    if (strcmp(command, entry.name) == 0) return entry.run(argc - 2, argv + 2);
  }
  fprintf(stderr, "zygo: unknown command '%s' (see zygo --help)\n", command);
  return 125;
}
