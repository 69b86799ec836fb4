// The `zygo` binary: dispatches subcommands.
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/api_commands.h"
#include "cli/doctor_command.h"
#include "cli/image_commands.h"
#include "cli/mcp_command.h"
#include "cli/run_command.h"
#include "core/base/helper_binary.h"

namespace {

constexpr char kUsage[] = R"(Usage: zygo [-v] COMMAND [ARGS...]

Commands:
  run      run a command in a one-shot sandbox (zygo run --help)
  pull     fetch an OCI image into the store: zygo pull [--tls-verify=false] REF
  load     add images from an OCI layout or docker-archive: zygo load PATH [NAME]
  login    save credentials for a registry: zygo login [-u USER] REGISTRY
  images   list the images in the store
  rmi      remove image references: zygo rmi REF [REF...]
  image    zygo image prune: delete what no image references
  doctor   try what zygo run needs here (namespaces, limits, seccomp, a sandbox, the
           network layers) and say what works: zygo doctor [--fix] [--json]
  bench    measure zygo against its peers (zygo bench --help)

Warm functions (the supervisor; each command has --help):
  serve    run the supervisor, which keeps functions warm and serves the API
  up       register a function from its TOML spec: zygo up SPEC.toml
  down     remove a function: zygo down NAME
  ls       list the functions and their state: zygo ls [--json]
  exec     run one request on a warm function: zygo exec NAME [--data JSON | -]
  scripts  store a runtime-pool script for exec --script: zygo scripts put FILE
  mcp      serve the Model Context Protocol on stdio: tools that run Python and
           JavaScript in warm pools and call functions (docs/mcp.md)

Global flags:
  -v, --verbose   print timings
      --root DIR  the image store (default $ZYGO_HOME, ~/.local/share/zygo,
                  /var/lib/zygo for root)
  -h, --help      this text
      --version   print the version

The supervisor's socket is --socket PATH on each command, else $ZYGO_SOCKET, else
/run/zygo/zygo.sock for root and $XDG_RUNTIME_DIR/zygo/zygo.sock (or
/tmp/zygo-UID/zygo.sock) for anyone else.
)";

// Replaces this process with `helper <command> <args...>`: the supervisor and its
// client commands need shared libraries (gRPC, libcurl) that the static `zygo` leaves out.
int ForwardToHelper(const char* helper, const char* package, const char* what, const char* command,
                    bool pass_command, int argc, char** argv) {
  absl::StatusOr<std::string> path = zygo::base::FindHelperBinary(helper, package, what);
  if (!path.ok()) {
    fprintf(stderr, "zygo: %s\n", std::string(path.status().message()).c_str());
    return 125;
  }
  std::vector<char*> args = {path->data()};
  if (pass_command) args.push_back(const_cast<char*>(command));
  for (int i = 0; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  execv(path->c_str(), args.data());
  fprintf(stderr, "zygo: exec %s: %s\n", path->c_str(), strerror(errno));
  return 125;
}

}  // namespace

int main(int argc, char** argv) {
  bool verbose = false;
  int i = 1;
  for (; i < argc && argv[i][0] == '-'; ++i) {
    if (strcmp(argv[i], "-v") == 0 || strcmp(argv[i], "--verbose") == 0) {
      verbose = true;
    } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      fputs(kUsage, stdout);
      return 0;
    } else if (strcmp(argv[i], "--root") == 0 && i + 1 < argc) {
      // The store's location reaches zygo-image through the environment.
      setenv("ZYGO_HOME", argv[++i], 1);
    } else if (strcmp(argv[i], "--version") == 0) {
      puts("zygo 0.1.0");
      return 0;
    } else {
      fprintf(stderr, "zygo: unknown flag %s (see zygo --help)\n", argv[i]);
      return 125;
    }
  }
  if (i >= argc) {
    fputs(kUsage, stderr);
    return 125;
  }
  const char* command = argv[i];
  if (strcmp(command, "run") == 0) {
    return zygo::cli::RunCommand(argc - i - 1, argv + i + 1, verbose);
  }
  if (strcmp(command, "bench") == 0) {
    // The benches measure this zygo, and know it from here.
    char self[PATH_MAX];
    if (realpath("/proc/self/exe", self) != nullptr) setenv("ZYGO_BENCH_ZYGO", self, 1);
    return ForwardToHelper("zygo-bench", "bench", "the benchmarks, `zygo bench`", command, false,
                           argc - i - 1, argv + i + 1);
  }
  int rest_argc = argc - i - 1;
  char** rest_argv = argv + i + 1;
  for (const char* forwarded : {"pull", "load", "login"}) {
    if (strcmp(command, forwarded) == 0) {
      return zygo::cli::ForwardToImageTool(forwarded, rest_argc, rest_argv);
    }
  }
  // The supervisor's client: in this binary, so a `zygo exec` pays no library loading.
  struct ApiEntry {
    const char* name;
    int (*run)(int, char**);
  };
  static constexpr ApiEntry kApiCommands[] = {
      {"up", &zygo::cli::UpCommand},           {"down", &zygo::cli::DownCommand},
      {"ls", &zygo::cli::LsCommand},           {"exec", &zygo::cli::ExecCommand},
      {"scripts", &zygo::cli::ScriptsCommand}, {"mcp", &zygo::cli::McpCommand},
  };
  for (const ApiEntry& entry : kApiCommands) {
    if (strcmp(command, entry.name) == 0) return entry.run(rest_argc, rest_argv);
  }
  if (strcmp(command, "serve") == 0) {
    // Installed as zygo-supervisor; in a Bazel tree it is //supervisor's own output.
    const char* helper = "zygo-supervisor";
    if (!zygo::base::FindHelperBinary(helper, "supervisor", "").ok()) helper = "supervisor";
    return ForwardToHelper(helper, "supervisor", "the supervisor, `zygo serve`", command,
                           /*pass_command=*/false, rest_argc, rest_argv);
  }
  if (strcmp(command, "doctor") == 0) return zygo::cli::DoctorCommand(rest_argc, rest_argv);
  if (strcmp(command, "images") == 0) return zygo::cli::ImagesCommand(rest_argc, rest_argv);
  if (strcmp(command, "rmi") == 0) return zygo::cli::RmiCommand(rest_argc, rest_argv);
  if (strcmp(command, "image") == 0) {
    if (rest_argc >= 1 && strcmp(rest_argv[0], "prune") == 0) {
      return zygo::cli::ImagePruneCommand(rest_argc - 1, rest_argv + 1);
    }
    fprintf(stderr, "zygo: usage: zygo image prune\n");
    return 125;
  }
  fprintf(stderr, "zygo: unknown command '%s' (see zygo --help)\n", command);
  return 125;
}
