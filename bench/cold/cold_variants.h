// The cases `zygo bench cold` measures: each workload run through zygo, through
// bubblewrap with the same root as zygo's host image, and bare (the floor).
// Parent side; building the commands needs no privileges (it only stats host paths).
#ifndef ZYGO_BENCH_COLD_COLD_VARIANTS_H_
#define ZYGO_BENCH_COLD_COLD_VARIANTS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/common/timed_spawn.h"

namespace zygo::bench {

inline constexpr char kVariantZygo[] = "zygo";
inline constexpr char kVariantBwrap[] = "bwrap";
inline constexpr char kVariantBare[] = "bare";

struct Workload {
  std::string name;               // as printed: "/bin/true"
  std::vector<std::string> argv;  // absolute paths only, never looked up on PATH
};

// /bin/true (the sandbox alone) and /usr/bin/python3 -c pass (a real interpreter's
// start-up). Always /usr/bin/python3: a python on the caller's PATH may be a shim.
std::vector<Workload> ColdWorkloads();

struct ColdCase {
  std::string workload;
  std::string variant;  // kVariantZygo, kVariantBwrap or kVariantBare
  Command command;
};

// bubblewrap's flags for the root of zygo's host image, read from zygo's own mount
// plan so the two cannot drift apart: --ro-bind for each host directory and /etc
// file zygo binds, --symlink for each symlink it recreates (merged /usr). /proc,
// /dev and /tmp are left to bwrap's own --proc, --dev and --tmpfs.
absl::StatusOr<std::vector<std::string>> BwrapRootArgs();

// Every case, workload by workload, in the order zygo, bwrap (when `with_peer`),
// bare. The sandboxed and bare commands all get zygo's default sandbox environment
// and working directory; the runners themselves (zygo, bwrap) get the caller's.
absl::StatusOr<std::vector<ColdCase>> BuildColdCases(const std::string& zygo,
                                                     const std::string& bwrap, bool with_peer);

}  // namespace zygo::bench

#endif  // ZYGO_BENCH_COLD_COLD_VARIANTS_H_
