#include "bench/pull/pull_bench.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "bench/common/host_info.h"
#include "bench/common/measured_zygo.h"
#include "bench/common/resolve_path.h"
#include "bench/common/scratch_dir.h"
#include "bench/common/timed_spawn.h"
#include "bench/pull/local_registry.h"
#include "bench/pull/pull_context.h"
#include "bench/pull/pull_flags.h"
#include "bench/pull/pull_parts.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"

extern char** environ;

namespace zygo::bench {
namespace {

constexpr char kTag[] = "bench";

#ifdef __OPTIMIZE__
constexpr bool kOptimizedBuild = true;
#else
constexpr bool kOptimizedBuild = false;
#endif

// Set by SIGINT, SIGTERM or SIGHUP; the measuring loop stops at the next run and every
// destructor then cleans up. A signal handler can only set a flag, hence the global.
volatile sig_atomic_t g_interrupted = 0;

extern "C" void OnInterrupt(int) { g_interrupted = 1; }

class InterruptCatcher {
 public:
  InterruptCatcher() {
    struct sigaction action = {};
    action.sa_handler = OnInterrupt;
    sigemptyset(&action.sa_mask);
    for (size_t i = 0; i < kCount; ++i) sigaction(kSignals[i], &action, &saved_[i]);
  }
  ~InterruptCatcher() {
    for (size_t i = 0; i < kCount; ++i) sigaction(kSignals[i], &saved_[i], nullptr);
  }
  InterruptCatcher(const InterruptCatcher&) = delete;
  InterruptCatcher& operator=(const InterruptCatcher&) = delete;

 private:
  static constexpr size_t kCount = 3;
  static constexpr int kSignals[kCount] = {SIGINT, SIGTERM, SIGHUP};
  struct sigaction saved_[kCount];
};

PullWorkload ChooseWorkload(bool no_python) {
  if (no_python) return {"busybox", {"true"}, "bin/busybox"};
  return {"python", {"python3", "-c", "pass"}, "usr/bin/python3"};
}

int Fail(const absl::Status& status) {
  fflush(stdout);  // what was printed so far comes first when both go to one place
  fprintf(stderr, "zygo bench pull: %s\n", std::string(status.message()).c_str());
  return 125;
}

absl::StatusOr<PullTools> ResolveTools(const PullOptions& options) {
  PullTools tools;
  ZYGO_ASSIGN_OR_RETURN(tools.zygo, MeasuredZygo(options.zygo));
  ZYGO_ASSIGN_OR_RETURN(tools.bwrap, ResolvePath(options.bwrap, "--bwrap", X_OK));
  ZYGO_ASSIGN_OR_RETURN(tools.skopeo, ResolvePath(options.skopeo, "--skopeo", X_OK));
  ZYGO_ASSIGN_OR_RETURN(tools.umoci, ResolvePath(options.umoci, "--umoci", X_OK));
  const std::string tree = options.tree.empty() ? DefaultTree() : options.tree;
  ZYGO_ASSIGN_OR_RETURN(tools.tree, ResolvePath(tree, "--tree", R_OK));
  for (const char* script : {"testing/registry/serve", "testing/registry/push",
                             "testing/registry/stop", "tools/images/build"}) {
    std::string path = absl::StrCat(tools.tree, "/", script);
    if (access(path.c_str(), X_OK) != 0) {
      return base::ErrnoStatus(
          errno, absl::StrCat("no ", script, " in ", tools.tree,
                              ": run from the source tree (or `bazel run`), or pass --tree"));
    }
  }
  return tools;
}

std::vector<std::string> CallerEnvironment() {
  std::vector<std::string> env;
  for (char** entry = environ; *entry != nullptr; ++entry) env.push_back(*entry);
  return env;
}

std::string FirstLine(const Command& command) {
  absl::StatusOr<std::string> out = CaptureStdout(command);
  if (!out.ok()) return "version unknown";
  std::string text(absl::StripAsciiWhitespace(*out));
  return text.substr(0, text.find('\n'));
}
std::string BuildMode(const std::string& zygo) {
  if (!IsForwardingZygo(zygo)) return "";
  return kOptimizedBuild ? ", optimised build"
                         : ", UNOPTIMISED build: use `bazel build -c opt //cli:zygo` for "
                           "numbers to publish";
}

void PrintPreamble(const PullBenchContext& b) {
  printf("zygo: %s (%s%s)\n", b.tools.zygo.c_str(),
         FirstLine({{b.tools.zygo, "--version"}}).c_str(), BuildMode(b.tools.zygo).c_str());
  printf("peers: %s (%s); %s (%s)\n", FirstLine({{b.tools.skopeo, "--version"}}).c_str(),
         b.tools.skopeo.c_str(), FirstLine({{b.tools.umoci, "--version"}}).c_str(),
         b.tools.umoci.c_str());
  printf("test image: %s: %s (%s)\n", b.workload.image.c_str(), b.image.layout.c_str(),
         b.image.digest.c_str());
  printf(
      "registry: docker-registry on %s (testing/registry/serve anonymous: plain HTTP on "
      "loopback), state in %s (%s)\n",
      b.registry->address().c_str(), b.registry->dir().c_str(),
      FileSystemName(b.registry->dir()).c_str());
  printf(
      "scratch: %s (%s); sync(1) before each timed pull; the page cache is not dropped (the "
      "registry's blobs are served from memory, as on a busy registry host)\n",
      b.scratch->path().c_str(), FileSystemName(b.scratch->path()).c_str());
  fflush(stdout);
}

// Starts the fixture (scratch directory, test image, registry) and runs both parts.
// Every object here is destroyed on return, which stops the registry and removes the
// scratch directory on every path.
absl::Status RunWithFixture(PullBenchContext& b) {
  ZYGO_ASSIGN_OR_RETURN(ScratchDir scratch, ScratchDir::Create("zygo-bench-pull"));
  b.scratch = &scratch;
  // busybox builds in well under a second, afresh; python takes half a minute the first
  // time and comes from tools/images' cache.
  const std::string out = b.options.no_python ? scratch.Sub("image") : "";
  ZYGO_ASSIGN_OR_RETURN(b.image, BuildTestImage(b.tools.tree, b.workload.image, out));
  if (g_interrupted) return absl::CancelledError("interrupted");
  ZYGO_ASSIGN_OR_RETURN(LocalRegistry registry, LocalRegistry::Start(b.tools.tree, getpid()));
  b.registry = &registry;
  b.reference = absl::StrCat(registry.address(), "/", b.workload.image, ":", kTag);
  ZYGO_RETURN_IF_ERROR(registry.Push(b.image, absl::StrCat(b.workload.image, ":", kTag)));
  PrintPreamble(b);
  ZYGO_RETURN_IF_ERROR(RunPullPart(b));
  return RunOneShotPart(b);
}

}  // namespace

int RunPullBench(int argc, char** argv) {
  absl::StatusOr<PullOptions> parsed = ParsePullFlags(argc, argv);
  if (!parsed.ok()) return Fail(parsed.status());
  if (parsed->help) {
    fputs(PullUsage(), stdout);
    return 0;
  }
  PullBenchContext b;
  b.options = *parsed;
  b.tag = kTag;
  b.interrupted = &g_interrupted;
  absl::StatusOr<PullTools> tools = ResolveTools(b.options);
  if (!tools.ok()) return Fail(tools.status());
  b.tools = *tools;
  b.workload = ChooseWorkload(b.options.no_python);
  b.caller_env = CallerEnvironment();
  b.host = ProbeHost(b.tools.bwrap);
  printf("%s\n", HostLine(b.host).c_str());
  if (HostWasBusy(b.host)) {
    printf("note: the host was busy before the bench (load %.2f on %d CPUs)\n", b.host.load[0],
           b.host.nproc);
  }
  if (b.options.no_python) {
    printf(
        "note: --no-python: the busybox image and `true`, to check the bench works; not a "
        "measurement to publish\n");
  }
  fflush(stdout);
  InterruptCatcher catcher;
  absl::Status done = RunWithFixture(b);
  if (!done.ok()) return Fail(done);
  return 0;
}

}  // namespace zygo::bench
