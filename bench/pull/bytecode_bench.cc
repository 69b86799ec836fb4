#include "bench/pull/bytecode_bench.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "bench/common/flag_set.h"
#include "bench/common/host_info.h"
#include "bench/common/measured_zygo.h"
#include "bench/common/stats.h"
#include "bench/common/timed_spawn.h"
#include "core/base/status_macros.h"
#include "images/build_sandbox.h"
#include "images/bytecode_layer.h"
#include "images/reference.h"
#include "images/run_image.h"
#include "images/store.h"

extern char** environ;

namespace zygo::bench {
namespace {

constexpr char kUsage[] = R"(Usage: zygo bench bytecode --image REF [--runs N] [--warmup N]

Imports ten common modules (json, re, datetime, decimal, email.message, http.client,
urllib.parse, argparse, logging, subprocess) in `zygo run REF python3 -c ...`, with and
without the image's bytecode layer (ZYGO_BYTECODE=0), interleaved, and prints p50/p99
of the import time (measured inside python) and of the whole run. Builds the layer
first if the store lacks it. REF must be in the store (zygo load/pull it first).

  --image REF   a Python image whose stdlib ships without .pyc (tools/images: python)
  --runs N      measured runs each way (default 30)
  --warmup N    unmeasured rounds first (default 3)
)";

// Prints the milliseconds the imports took, measured in the interpreter itself.
constexpr char kWorkload[] =
    "import time\n"
    "t = time.perf_counter()\n"
    "import json, re, datetime, decimal, email.message, http.client, urllib.parse, argparse, "
    "logging, subprocess\n"
    "print((time.perf_counter() - t) * 1000)\n";

struct Options {
  std::string image;
  int runs = 30;
  int warmup = 3;
  bool help = false;
};

absl::StatusOr<Options> ParseFlags(int argc, char** argv) {
  Options options;
  FlagSet flags("bytecode");
  flags.Text("--image", &options.image)
      .Count("--runs", &options.runs)
      .Count("--warmup", &options.warmup, 0);
  if (absl::Status parsed = flags.Parse(argc, argv, &options.help); !parsed.ok()) return parsed;
  if (options.help) return options;
  if (options.image.empty()) return absl::InvalidArgumentError("--image REF is required");
  return options;
}

// The bytecode root, built now if missing: one line on what it is and what it cost.
absl::StatusOr<std::string> PrepareLayer(const std::string& image_ref) {
  ZYGO_ASSIGN_OR_RETURN(images::Reference ref, images::ParseReference(image_ref));
  ZYGO_ASSIGN_OR_RETURN(images::Store store, images::Store::Open(images::Store::DefaultRoot()));
  ZYGO_ASSIGN_OR_RETURN(std::optional<images::RunnableImage> image,
                        images::FindRunnableImage(store, ref));
  if (!image.has_value()) {
    return absl::NotFoundError(absl::StrCat(image_ref, " is not in the store (zygo load it)"));
  }
  ZYGO_ASSIGN_OR_RETURN(std::optional<images::BytecodeRoot> root,
                        images::EnsureBytecodeRoot(store, *image, images::RunSandboxJob));
  if (!root.has_value()) {
    return absl::FailedPreconditionError(
        absl::StrCat(image_ref, " needs no bytecode layer (no Python, or its stdlib has .pyc)"));
  }
  if (!root->built) return absl::StrCat(root->reference, " (already built)");
  return absl::StrFormat("%s: built in %.0f ms, %lld .pyc files, %.1f MB", root->reference,
                         root->build_ms, static_cast<long long>(root->pyc_files),
                         root->pyc_bytes / 1e6);
}

Command RunCommand(const std::string& zygo, const std::string& image, bool bytecode) {
  Command command;
  command.argv = {zygo, "run", "--pull=never", image, "python3", "-c", kWorkload};
  command.inherit_env = false;
  for (char** var = environ; *var != nullptr; ++var) {
    if (strncmp(*var, "ZYGO_BYTECODE=", 14) != 0) command.env.push_back(*var);
  }
  command.env.push_back(bytecode ? "ZYGO_BYTECODE=1" : "ZYGO_BYTECODE=0");
  return command;
}

struct Samples {
  std::vector<double> import_ms, run_ms;
};

absl::Status RunOnce(const Command& command, Samples* samples, bool keep) {
  auto start = std::chrono::steady_clock::now();
  ZYGO_ASSIGN_OR_RETURN(std::string out, CaptureStdout(command));
  double wall =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  double import_ms = 0;
  if (!absl::SimpleAtod(absl::StripAsciiWhitespace(out), &import_ms)) {
    return absl::InternalError(absl::StrCat("the workload printed '", out, "', not a time"));
  }
  if (keep) {
    samples->import_ms.push_back(import_ms);
    samples->run_ms.push_back(wall);
  }
  return absl::OkStatus();
}

// Alternates which way goes first each round, so drift lands on both alike.
absl::Status Measure(const Options& options, const std::string& zygo, Samples* without,
                     Samples* with) {
  Command off = RunCommand(zygo, options.image, false);
  Command on = RunCommand(zygo, options.image, true);
  for (int round = 0; round < options.warmup + options.runs; ++round) {
    bool keep = round >= options.warmup;
    bool on_first = round % 2 == 0;
    ZYGO_RETURN_IF_ERROR(RunOnce(on_first ? on : off, on_first ? with : without, keep));
    ZYGO_RETURN_IF_ERROR(RunOnce(on_first ? off : on, on_first ? without : with, keep));
  }
  return absl::OkStatus();
}

std::string HostText() {
  HostInfo host = ProbeHost("/usr/bin/bwrap");
  return absl::StrFormat(
      "host: Linux %s %s, CPU %s, nproc %d, memory %.1f GiB, cgroup %s, "
      "load %.2f %.2f %.2f%s",
      host.kernel, host.arch, host.cpu_model, host.nproc, host.memory_gib, host.cgroup_mode,
      host.load[0], host.load[1], host.load[2],
      HostWasBusy(host) ? " (busy: numbers may be off)" : "");
}

absl::Status PrintTable(const char* title, const std::vector<double>& without,
                        const std::vector<double>& with) {
  ZYGO_ASSIGN_OR_RETURN(Summary off, Summarize(without));
  ZYGO_ASSIGN_OR_RETURN(Summary on, Summarize(with));
  printf("\n%s\n", title);
  printf("  %-26s %10s %10s\n", "", "p50", "p99");
  printf("  %-26s %7.1f ms %7.1f ms\n", "without bytecode layer", off.p50, off.p99);
  printf("  %-26s %7.1f ms %7.1f ms\n", "with bytecode layer", on.p50, on.p99);
  printf("  %-26s %9.2fx %9.2fx\n", "without / with", off.p50 / on.p50, off.p99 / on.p99);
  return absl::OkStatus();
}

int Fail(const absl::Status& status) {
  fflush(stdout);
  fprintf(stderr, "zygo bench bytecode: %s\n", std::string(status.message()).c_str());
  return 125;
}

}  // namespace

int RunBytecodeBench(int argc, char** argv) {
  absl::StatusOr<Options> options = ParseFlags(argc, argv);
  if (!options.ok()) {
    fputs(kUsage, stderr);
    return Fail(options.status());
  }
  if (options->help) {
    fputs(kUsage, stdout);
    return 0;
  }
  absl::StatusOr<std::string> measured_zygo = MeasuredZygo("");
  if (!measured_zygo.ok()) return Fail(measured_zygo.status());
  const std::string zygo = *measured_zygo;
  printf("%s\n", HostText().c_str());
  absl::StatusOr<std::string> layer = PrepareLayer(options->image);
  if (!layer.ok()) return Fail(layer.status());
  printf("image: %s\nlayer: %s\nruns: %d each way, interleaved, after %d warm-up rounds\n",
         options->image.c_str(), layer->c_str(), options->runs, options->warmup);
  fflush(stdout);
  Samples without, with;
  absl::Status measured = Measure(*options, zygo, &without, &with);
  if (!measured.ok()) return Fail(measured);
  absl::Status printed = PrintTable("importing ten common modules (time inside python)",
                                    without.import_ms, with.import_ms);
  if (printed.ok()) {
    printed =
        PrintTable("the whole `zygo run IMAGE python3 -c ...` (wall)", without.run_ms, with.run_ms);
  }
  if (!printed.ok()) return Fail(printed);
  return 0;
}

}  // namespace zygo::bench
