// `zygo doctor`: what this host gives Zygo, probed for real (cgroup driver, Landlock
// ABI, user namespaces, seccomp), where the image store is, and the stale cgroups killed
// zygo processes left (`--fix` removes them).
#ifndef ZYGO_CLI_DOCTOR_COMMAND_H_
#define ZYGO_CLI_DOCTOR_COMMAND_H_

namespace zygo::cli {

// Prints one line per facility and one for stale cgroups (removed with --fix); exits 0
// when a default `zygo run` can work here, 1 when something it needs is missing (each
// such line says what to do), 125 for a bad argument.
int DoctorCommand(int argc, char** argv);

}  // namespace zygo::cli

#endif  // ZYGO_CLI_DOCTOR_COMMAND_H_
