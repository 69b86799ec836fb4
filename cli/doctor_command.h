// `zygo doctor`: what this host gives Zygo, each line an attempt of the thing itself
// (namespaces, a limited cgroup with a child in it, seccomp, Landlock, a sandbox run,
// overlayfs, the tun device, nftables, pasta, cgroup2's favordynmods), where the image
// store is, and the stale cgroups killed zygo processes left. `--fix` removes those and
// offers the favordynmods remount; `--json` prints one document.
#ifndef ZYGO_CLI_DOCTOR_COMMAND_H_
#define ZYGO_CLI_DOCTOR_COMMAND_H_

namespace zygo::cli {

// Prints one line per check (or with --json one document); exits 0 when a default
// `zygo run` can work here, 1 when something it needs is missing (each such line says
// what to do), 125 for a bad argument. Must run single-threaded: the checks fork.
int DoctorCommand(int argc, char** argv);

}  // namespace zygo::cli

#endif  // ZYGO_CLI_DOCTOR_COMMAND_H_
