// The one shared harness for tests that run real sandboxes: run `zygo` (or the escape
// probe inside it) as a child process and collect what came back.
#ifndef ZYGO_TESTING_HARNESS_H_
#define ZYGO_TESTING_HARNESS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace zygo::testing {

struct RunResult {
  int exit_code = -1;        // -1 when it did not exit normally
  int term_signal = 0;       // the signal that ended zygo itself, if any
  std::string out;           // stdout
  std::string err;           // stderr
  std::string outcome_json;  // the --outcome file, when one was asked for
};

struct RunOptions {
  int stdin_fd = -1;             // default: /dev/null
  bool want_outcome = true;      // pass --outcome and read it back
  int timeout_seconds = 120;     // the harness kills zygo after this (a hung test fails)
  std::vector<std::string> env;  // extra host environment for zygo itself
  int as_uid = -1;               // run zygo as this user (rootless tests); -1: as the caller
  int as_gid = -1;
  std::string zygo_binary;  // default: ZygoPath()
};

// Options that run zygo as the ordinary system user zygo-rootless (made on first use;
// needs root): a copy of zygo, and of each of `helpers` (runfile paths, such as
// "net/zygo-net"), in a fresh directory others may read, `*dir`, which the caller removes.
absl::StatusOr<RunOptions> RootlessRunOptions(const std::vector<std::string>& helpers,
                                              std::string* dir);

// A file of this workspace in Bazel's runfiles ("tools/images/build").
std::string Runfile(const std::string& path);

// Newlines in `text`: a "one clear line" error has exactly one.
int LineCount(const std::string& text);

// Paths of the binaries under test, from Bazel's runfiles.
std::string ZygoPath();
std::string ProbePath();

// Runs `zygo run <flags> <image> <argv...>`.
RunResult RunZygo(const std::vector<std::string>& flags, const std::string& image,
                  const std::vector<std::string>& argv, const RunOptions& options = {});

// Runs the escape probe inside a host-image sandbox (bound read-only at /probe).
RunResult RunProbe(const std::vector<std::string>& probe_args,
                   const std::vector<std::string>& extra_flags = {},
                   const RunOptions& options = {});

// Runs the escape probe directly on the host, as a control that the probe works.
// Only for harmless subcommands.
RunResult RunProbeOnHost(const std::vector<std::string>& probe_args,
                         const RunOptions& options = {});

// Runs any program directly on the host.
RunResult RunOnHost(const std::vector<std::string>& argv, const RunOptions& options = {});

// A test image from tools/images (built once, then reused from its cache).
struct TestImage {
  std::string layout;  // IMAGE=: the OCI layout dir (the .tar for busybox-docker)
  std::string digest;  // DIGEST=: what its tag "latest" points at
};
// Runs `tools/images/build NAME` (the test needs //tools/images in its data). The error
// carries the end of the script's stderr (the Debian images need root and the mirror).
absl::StatusOr<TestImage> BuildTestImage(const std::string& name, const RunOptions& options = {});

// The probe's verdict: "allowed", "denied <ERRNO>", or "" when it printed none.
std::string Verdict(const RunResult& result, const std::string& subcommand);

// A field of the outcome JSON, as its JSON text ("\"ok\"", "137", "true").
std::string OutcomeField(const RunResult& result, const std::string& key);

// The bytes of a file such as /proc/PID/cmdline: what could be read before its process
// went away (a read then fails with ESRCH), never an exception.
std::string ReadProcFile(const std::string& path);

// Processes whose command line or environment contains `needle`, excluding the
// caller. A sandboxed process can be found by a marker passed with `-e`.
std::vector<int> ProcessesMatching(const std::string& needle);

// Directories under /sys/fs/cgroup named "zygo-<pid>-<n>" whose zygo <pid> is gone:
// leaks. (A live zygo's cgroup, e.g. another test's, is not a leftover.)
std::vector<std::string> LeftoverCgroups();

// Mounts in the host's mount table whose mountpoint contains "zygo".
std::vector<std::string> LeftoverMounts();

}  // namespace zygo::testing

#endif  // ZYGO_TESTING_HARNESS_H_
