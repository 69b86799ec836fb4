// The supervisor client commands of `zygo`: up, down, ls, exec, scripts. Each takes the
// arguments after its name and returns the exit code (125 with one line for Zygo's own
// failures: the supervisor unreachable, an unknown function, bad input).
#ifndef ZYGO_CLI_API_COMMANDS_H_
#define ZYGO_CLI_API_COMMANDS_H_

namespace zygo::cli {

int UpCommand(int argc, char** argv);
int DownCommand(int argc, char** argv);
int LsCommand(int argc, char** argv);
int ExecCommand(int argc, char** argv);
int ScriptsCommand(int argc, char** argv);

}  // namespace zygo::cli

#endif  // ZYGO_CLI_API_COMMANDS_H_
