#include "bench/pull/pull_parts.h"

#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "bench/common/interleaved.h"
#include "bench/common/other_work.h"
#include "bench/common/timed_spawn.h"
#include "bench/pull/pull_cases.h"
#include "bench/pull/pull_report.h"
#include "bench/pull/store_snapshot.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "core/base/sys/fs.h"
#include "core/base/sys/remove_tree.h"
#include "core/base/sys/wait_status.h"
#include "images/reference.h"
#include "images/run_image.h"
#include "images/store.h"

namespace zygo::bench {
namespace {

// A cold pull of the python image takes seconds; one still going after ten minutes is
// stuck, and the bench says so instead of waiting forever.
constexpr int kPullDeadlineMs = 10 * 60'000;
constexpr int kOneShotDeadlineMs = 60'000;
// How long to wait for the registry's access log to show a pull's requests.
constexpr int kLogWaitMs = 5'000;

// Runs `command` untimed for set-up; an error unless it exits 0.
absl::StatusOr<double> RunSetUp(const Command& command, const std::string& what) {
  absl::StatusOr<TimedRun> run = RunTimed(command, kPullDeadlineMs);
  if (!run.ok() || run->wait_status != 0) {
    std::string why = run.ok() ? base::sys::DescribeWaitStatus(run->wait_status)
                               : std::string(run.status().message());
    return absl::AbortedError(
        absl::StrCat(what, ": ", why, "; repeat it by hand to see why: ", CommandLine(command)));
  }
  return run->ms;
}

// Flushes what earlier runs wrote, so their writeback is not charged to the next run.
absl::Status Sync() { return RunSetUp(Command{{"/bin/sync"}}, "sync").status(); }

// The image `reference` in the store at `root`, after checking its root holds `probe`.
absl::StatusOr<images::RunnableImage> StoredImage(const std::string& root,
                                                  const std::string& reference,
                                                  const std::string& probe) {
  ZYGO_ASSIGN_OR_RETURN(images::Store store, images::Store::Open(root));
  ZYGO_ASSIGN_OR_RETURN(images::Reference ref, images::ParseReference(reference));
  ZYGO_ASSIGN_OR_RETURN(std::optional<images::RunnableImage> image,
                        images::FindRunnableImage(store, ref));
  if (!image) return absl::NotFoundError(absl::StrCat(reference, " is not in the store ", root));
  const std::string path = absl::StrCat(image->rootfs, "/", probe);
  if (access(path.c_str(), F_OK) != 0) {
    return base::ErrnoStatus(errno, absl::StrCat("the unpacked root lacks /", probe));
  }
  return *image;
}

struct TreeSize {
  double mib = 0;
  int64_t files = 0;
};

TreeSize MeasureTree(const std::string& root) {
  namespace fs = std::filesystem;
  TreeSize size;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec) || it->is_symlink(ec)) continue;
    size.mib += static_cast<double>(it->file_size(ec)) / (1 << 20);
    ++size.files;
  }
  return size;
}

void PrintCommands(const std::vector<InterleavedCase>& cases) {
  printf("commands:\n");
  for (const InterleavedCase& c : cases) {
    for (const TimedStep& step : c.steps) {
      printf("  %-22s %s\n", c.variant.c_str(), step.shown.c_str());
    }
  }
}

// Prints the method line (the runs, then `method_rest`), measures `cases` taking turns, and
// prints the table against `peer`, each case's steps, the other work and the commands.
absl::StatusOr<std::vector<MeasuredCase>> MeasureAndPrint(const std::vector<InterleavedCase>& cases,
                                                          const InterleavedOptions& options,
                                                          absl::string_view method_rest,
                                                          const PullBenchContext& b,
                                                          const char* peer) {
  printf(
      "method: %d runs after %d warm-up of each case, %zu cases taking turns; spawn to reap, "
      "CLOCK_MONOTONIC%.*s\n",
      options.runs, options.warmup, cases.size(), static_cast<int>(method_rest.size()),
      method_rest.data());
  fflush(stdout);
  const LocalRegistry* registry = b.registry;
  OtherWork other_work([registry] { return registry->CpuSeconds(); });
  ZYGO_ASSIGN_OR_RETURN(std::vector<MeasuredCase> measured, MeasureInterleaved(cases, options));
  std::vector<CaseResult> results;
  for (const MeasuredCase& m : measured) results.push_back(m.result);
  printf("\n%s", FormatPeerTable(results, peer).c_str());
  for (size_t i = 0; i < cases.size(); ++i) {
    std::vector<std::string> names;
    for (const TimedStep& step : cases[i].steps) names.push_back(step.name);
    std::string steps = FormatSteps(cases[i].variant, names, measured[i].steps);
    if (!steps.empty()) printf("%s\n", steps.c_str());
  }
  printf("%s\n", other_work.Line(b.host.nproc).c_str());
  PrintCommands(cases);
  fflush(stdout);
  return measured;
}

// ---- Part 1: pull and unpack.

// The paths each pull variant uses, under the scratch directory.
struct PullPaths {
  std::string cold_store, warm_store, peer_dir;
};

struct WarmStore {
  images::RunnableImage image;
  int blobs = 0;  // what a cold pull fetches: the config and every layer
};

// Fills the warm store with one untimed pull, with ZYGO_BYTECODE unset as a user's
// would be, and says what that pull put in the store: whether it built a bytecode layer.
absl::StatusOr<WarmStore> FillWarmStore(const PullBenchContext& b, const PullPaths& paths,
                                        bool* built_bytecode) {
  Command pull{
      {b.tools.zygo, "--root", paths.warm_store, "pull", "--tls-verify=false", b.reference},
      ZygoEnvironment(b.caller_env, /*bytecode_off=*/false),
      false,
      ""};
  ZYGO_ASSIGN_OR_RETURN(double ms, RunSetUp(pull, "filling the warm store"));
  ZYGO_ASSIGN_OR_RETURN(StoreSnapshot after, TakeStoreSnapshot(paths.warm_store));
  *built_bytecode = AddedBytecodeImage(StoreSnapshot{}, after);
  WarmStore warm;
  ZYGO_ASSIGN_OR_RETURN(warm.image,
                        StoredImage(paths.warm_store, b.reference, b.workload.probe_file));
  ZYGO_ASSIGN_OR_RETURN(images::Store store, images::Store::Open(paths.warm_store));
  ZYGO_ASSIGN_OR_RETURN(images::Reference ref, images::ParseReference(b.reference));
  ZYGO_ASSIGN_OR_RETURN(std::optional<images::ImageRecord> record, store.Find(ref.Canonical()));
  if (!record) return absl::NotFoundError("the warm store has no record of the image");
  warm.blobs = static_cast<int>(record->layer_digests.size()) + 1;
  TreeSize unpacked = MeasureTree(warm.image.rootfs);
  printf(
      "image: %zu layer(s), %.1f MiB compressed, %.1f MiB in %lld files unpacked\n"
      "warm store: filled by one untimed pull with ZYGO_BYTECODE unset (%.0f ms); it now holds "
      "%s\n",
      record->layer_digests.size(), record->size_bytes / double(1 << 20), unpacked.mib,
      static_cast<long long>(unpacked.files), ms, DescribeAdded(StoreSnapshot{}, after).c_str());
  return warm;
}

// A cold pull: an absent store before, then the registry must have served zygo the
// manifest and every blob, and the store must hold the unpacked root.
InterleavedCase ZygoColdCase(const PullBenchContext& b, std::string variant,
                             std::vector<TimedStep> steps, const std::string& store, int blobs) {
  auto seen = std::make_shared<ZygoRequests>();
  const std::string repo = b.workload.image;
  InterleavedCase c{"pull+unpack", std::move(variant), std::move(steps), nullptr, nullptr};
  c.before = [&b, seen, store, repo]() -> absl::Status {
    ZYGO_RETURN_IF_ERROR(base::sys::RemoveTree(store));
    *seen = b.registry->Requests(repo);
    return Sync();
  };
  c.after = [&b, seen, store, repo, blobs]() -> absl::Status {
    ZygoRequests now = b.registry->WaitForRequests(repo, kLogWaitMs, [&](const ZygoRequests& r) {
      return r.manifest_gets > seen->manifest_gets && r.blob_gets >= seen->blob_gets + blobs;
    });
    if (now.manifest_gets <= seen->manifest_gets || now.blob_gets < seen->blob_gets + blobs) {
      return absl::InternalError(absl::StrCat(
          "the registry served zygo ", now.manifest_gets - seen->manifest_gets, " manifest(s) and ",
          now.blob_gets - seen->blob_gets, " blob(s) for a cold pull, not 1 and ", blobs));
    }
    ZYGO_RETURN_IF_ERROR(StoredImage(store, b.reference, b.workload.probe_file).status());
    return base::sys::RemoveTree(store);
  };
  return c;
}

// A warm pull: the registry must have served zygo the manifest and no blob, and the
// store must be unchanged (nothing unpacked again).
InterleavedCase ZygoWarmCase(const PullBenchContext& b, std::vector<TimedStep> steps,
                             const std::string& store) {
  auto seen = std::make_shared<ZygoRequests>();
  auto held = std::make_shared<StoreSnapshot>();
  const std::string repo = b.workload.image;
  InterleavedCase c{"pull+unpack", kVariantZygoWarm, std::move(steps), nullptr, nullptr};
  c.before = [&b, seen, held, store, repo]() -> absl::Status {
    *seen = b.registry->Requests(repo);
    ZYGO_ASSIGN_OR_RETURN(*held, TakeStoreSnapshot(store));
    return Sync();
  };
  c.after = [&b, seen, held, store, repo]() -> absl::Status {
    ZygoRequests now = b.registry->WaitForRequests(repo, kLogWaitMs, [&](const ZygoRequests& r) {
      return r.manifest_gets > seen->manifest_gets;
    });
    if (now.manifest_gets <= seen->manifest_gets) {
      return absl::InternalError("the warm pull did not fetch the manifest from the registry");
    }
    if (now.blob_gets != seen->blob_gets) {
      return absl::InternalError(
          absl::StrCat("the warm pull fetched ", now.blob_gets - seen->blob_gets, " blob(s)"));
    }
    ZYGO_ASSIGN_OR_RETURN(StoreSnapshot after, TakeStoreSnapshot(store));
    std::string added = DescribeAdded(*held, after);
    if (!added.empty()) return absl::InternalError("the warm pull added to the store: " + added);
    return absl::OkStatus();
  };
  return c;
}

// skopeo copy + umoci unpack: an absent directory before, an unpacked root after.
InterleavedCase PeerPullCase(const PullBenchContext& b, std::vector<TimedStep> steps,
                             const std::string& dir) {
  InterleavedCase c{"pull+unpack", kVariantPullPeer, std::move(steps), nullptr, nullptr};
  c.before = [dir]() -> absl::Status {
    // Empty, as a user's fresh directory would be; skopeo makes the layout inside it.
    ZYGO_RETURN_IF_ERROR(base::sys::RemoveTree(dir));
    ZYGO_RETURN_IF_ERROR(base::sys::MakeDirectory(dir, 0755));
    return Sync();
  };
  c.after = [&b, dir]() -> absl::Status {
    const std::string probe = absl::StrCat(PeerRootfs(dir), "/", b.workload.probe_file);
    if (access(probe.c_str(), F_OK) != 0) {
      return base::ErrnoStatus(errno, absl::StrCat("umoci's unpacked root lacks ", probe));
    }
    return base::sys::RemoveTree(dir);
  };
  return c;
}

}  // namespace

absl::Status RunPullPart(const PullBenchContext& b) {
  const PullPaths paths{b.scratch->Sub("cold-store"), b.scratch->Sub("warm-store"),
                        b.scratch->Sub("peer")};
  printf("\n== 1. pull and unpack %s\n", b.reference.c_str());
  bool built_bytecode = false;
  ZYGO_ASSIGN_OR_RETURN(WarmStore warm, FillWarmStore(b, paths, &built_bytecode));
  printf(
      "bytecode layer: %s\n",
      built_bytecode
          ? "built by that pull; the zygo rows below run with ZYGO_BYTECODE=0 (fetch and unpack "
            "only, as skopeo and umoci do), and `zygo cold default` pulls with it unset"
          : "none built by that pull; the zygo rows below run with ZYGO_BYTECODE=0 all the same");
  PullCommandsInput input{b.tools.zygo,     b.tools.skopeo,   b.tools.umoci,  b.reference,
                          paths.cold_store, paths.warm_store, paths.peer_dir, b.caller_env};
  std::vector<InterleavedCase> cases;
  for (auto& [variant, steps] : PullSteps(input, built_bytecode)) {
    if (variant == kVariantZygoWarm) {
      cases.push_back(ZygoWarmCase(b, std::move(steps), paths.warm_store));
    } else if (variant == kVariantPullPeer) {
      cases.push_back(PeerPullCase(b, std::move(steps), paths.peer_dir));
    } else {
      cases.push_back(ZygoColdCase(b, variant, std::move(steps), paths.cold_store, warm.blobs));
    }
  }
  InterleavedOptions options{b.options.pull_runs, b.options.pull_warmup, kPullDeadlineMs,
                             b.interrupted};
  return MeasureAndPrint(cases, options,
                         ", steps summed; nearest-rank percentiles. Untimed between runs: a fresh "
                         "directory, sync(1), checks that the run did its work (the registry's "
                         "log of zygo's requests; the unpacked root), removal. Peer: "
                         "skopeo+umoci (it has no store to be warm: `zygo warm` is what a "
                         "repeated `zygo pull` costs, not like-for-like)",
                         b, kVariantPullPeer)
      .status();
}

// ---- Part 2: a one-shot run in the image.

namespace {

// Runs the image once with ZYGO_BYTECODE unset, untimed, and prints what that first use
// added to the store: a bytecode layer, or nothing.
absl::Status ReportFirstUse(const PullBenchContext& b, const std::string& store,
                            const TimedStep& step) {
  ZYGO_ASSIGN_OR_RETURN(StoreSnapshot before, TakeStoreSnapshot(store));
  ZYGO_ASSIGN_OR_RETURN(double ms, RunSetUp(step.command, "the first run of the image"));
  ZYGO_ASSIGN_OR_RETURN(StoreSnapshot after, TakeStoreSnapshot(store));
  const std::string added = DescribeAdded(before, after);
  if (AddedBytecodeImage(before, after)) {
    printf(
        "bytecode layer: EXISTS: the first run with ZYGO_BYTECODE unset built it (untimed, %.0f "
        "ms; added %s). `zygo default` runs with it, `zygo ZYGO_BYTECODE=0` and bwrap without "
        "(bwrap's root is the original image, which has no .pyc files)\n",
        ms, added.c_str());
  } else if (added.empty()) {
    printf(
        "bytecode layer: NONE: a first run with ZYGO_BYTECODE unset (untimed, %.0f ms) added "
        "nothing to the store: no bytecode layer was built for this image, so `zygo default` "
        "and `zygo ZYGO_BYTECODE=0` do the same work and their difference is run-to-run "
        "noise\n",
        ms);
  } else {
    printf(
        "bytecode layer: unclear: a first run with ZYGO_BYTECODE unset (untimed, %.0f ms) added "
        "%s to the store, but no +bytecode image\n",
        ms, added.c_str());
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RunOneShotPart(const PullBenchContext& b) {
  const std::string store = b.scratch->Sub("run-store");
  const std::string name = absl::StrCat(b.workload.image, ":", b.tag);
  printf("\n== 2. one-shot `%s` in %s\n", absl::StrJoin(b.workload.argv, " ").c_str(),
         name.c_str());
  Command load{{b.tools.zygo, "--root", store, "load", b.image.layout, name},
               ZygoEnvironment(b.caller_env, /*bytecode_off=*/true),
               false,
               ""};
  ZYGO_RETURN_IF_ERROR(RunSetUp(load, "loading the image").status());
  ZYGO_ASSIGN_OR_RETURN(images::RunnableImage image,
                        StoredImage(store, name, b.workload.probe_file));
  OneShotCommandsInput input{b.tools.zygo,
                             b.tools.bwrap,
                             store,
                             name,
                             image.rootfs,
                             image.config.env,
                             image.config.working_dir,
                             b.workload.argv,
                             b.caller_env};
  std::vector<InterleavedCase> cases;
  for (auto& [variant, steps] : OneShotSteps(input)) {
    cases.push_back(
        {absl::StrJoin(b.workload.argv, " "), variant, std::move(steps), nullptr, nullptr});
  }
  printf("image: loaded with `zygo load` (untimed); bwrap's root is zygo's flattened root %s\n",
         image.rootfs.c_str());
  ZYGO_RETURN_IF_ERROR(ReportFirstUse(b, store, cases[1].steps[0]));
  InterleavedOptions options{b.options.oneshot_runs, b.options.oneshot_warmup, kOneShotDeadlineMs,
                             b.interrupted};
  return MeasureAndPrint(cases, options, "; nearest-rank percentiles. Peer: bwrap", b,
                         kVariantRunPeer)
      .status();
}

}  // namespace zygo::bench
