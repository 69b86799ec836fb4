// zygo-bench: the benches, which `zygo bench BENCH [flags]` execs (zygo passes itself in
// $ZYGO_BENCH_ZYGO as the zygo to measure).
#include <stdio.h>
#include <string.h>

#include "bench/cold/cold_bench.h"
#include "bench/net/net_bench.h"
#include "bench/pull/bytecode_bench.h"
#include "bench/pull/pull_bench.h"
#include "bench/warm/density_bench.h"
#include "bench/warm/embed_bench.h"
#include "bench/warm/load_bench.h"
#include "bench/warm/warm_bench.h"

namespace {

constexpr char kBenchUsage[] = R"(Usage: zygo bench BENCH [flags]

Benches:
  cold     a one-shot sandbox from start to finish, against bubblewrap and a bare
           run (zygo bench cold --help)
  pull     pulling an image against skopeo + umoci, and a one-shot run in it
           against bubblewrap (zygo bench pull --help)
  bytecode importing ten modules in a Python image with and without its bytecode
           layer (zygo bench bytecode --help)
  net      what a network mode adds to a one-shot run, and connect and resolve
           times through the sandbox, in a fake internet (zygo bench net --help)
  warm     the warm path of a Python function, phase by phase, against a Python
           server that forks per request; --pool: a runtime pool against a warm
           function; --runtime node: a Node function against a node per request
           and one node running every request (zygo bench warm --help)
  load     sustained requests per second through one warm function
           (zygo bench load --help)
  density  memory per extra warm function against per extra pooled script
           (zygo bench density --help)
  embed    an import-heavy script per call: zygo exec against zygo run and
           bubblewrap one-shot (zygo bench embed --help)

warm, load, density and embed take --quick: a smoke run of under 20 s for CI.
)";

struct Bench {
  const char* name;
  int (*run)(int argc, char** argv);
};

constexpr Bench kBenches[] = {
    {"cold", zygo::bench::RunColdBench},         {"pull", zygo::bench::RunPullBench},
    {"bytecode", zygo::bench::RunBytecodeBench}, {"net", zygo::bench::RunNetBench},
    {"warm", zygo::bench::RunWarmBench},         {"load", zygo::bench::RunLoadBench},
    {"density", zygo::bench::RunDensityBench},   {"embed", zygo::bench::RunEmbedBench},
};

}  // namespace

// `argv[1]` is the bench.
int main(int argc, char** argv) {
  --argc;
  ++argv;
  if (argc == 0) {
    fputs(kBenchUsage, stderr);
    return 125;
  }
  if (strcmp(argv[0], "-h") == 0 || strcmp(argv[0], "--help") == 0) {
    fputs(kBenchUsage, stdout);
    return 0;
  }
  for (const Bench& bench : kBenches) {
    if (strcmp(argv[0], bench.name) == 0) return bench.run(argc - 1, argv + 1);
  }
  fprintf(stderr,
          "zygo bench: unknown bench '%s' (cold, pull, bytecode, net, warm, load, density, "
          "embed; see zygo bench --help)\n",
          argv[0]);
  return 125;
}
