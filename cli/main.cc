// The `zygo` binary: dispatches subcommands.
#include <stdio.h>
#include <string.h>

#include "cli/run_command.h"

namespace {

constexpr char kUsage[] = R"(Usage: zygo [-v] COMMAND [ARGS...]

Commands:
  run      run a command in a one-shot sandbox (zygo run --help)
  bench    measure zygo against its peers (zygo bench --help)

Global flags:
  -v, --verbose   print timings
  -h, --help      this text
      --version   print the version
)";

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
  fprintf(stderr, "zygo: unknown command '%s' (see zygo --help)\n", command);
  return 125;
}
