// `zygo run`: parse, plan, launch, report.
#ifndef ZYGO_CLI_RUN_COMMAND_H_
#define ZYGO_CLI_RUN_COMMAND_H_

namespace zygo::cli {

// `argv` starts after the word "run". `verbose` is the global -v. Returns the exit
// code for zygo: the command's own, or 125/126/127/137 as `zygo run --help` says.
int RunCommand(int argc, char** argv, bool verbose);

}  // namespace zygo::cli

#endif  // ZYGO_CLI_RUN_COMMAND_H_
