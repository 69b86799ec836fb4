#include "bench/common/other_work.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/common/host_info.h"

namespace zygo::bench {
namespace {

// Above this many CPUs of other work on average, other work competed with the runs
// enough to move the numbers (the threshold `zygo bench cold` uses). Even an idle host
// shows some: the kernel's own work for the runs is charged to no process of the bench.
constexpr double kBusyOtherCpus = 0.5;

}  // namespace

OtherWork::OtherWork(std::function<std::optional<double>()> helper_cpu)
    : helper_cpu_(std::move(helper_cpu)),
      busy_(HostBusyCpuSeconds()),
      own_(OwnCpuSeconds()),
      helpers_(helper_cpu_ ? helper_cpu_() : std::nullopt),
      start_(std::chrono::steady_clock::now()) {}

std::string OtherWork::Line(int nproc) const {
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::optional<double> busy = HostBusyCpuSeconds();
  std::optional<double> helpers = helper_cpu_ ? helper_cpu_() : std::nullopt;
  const double own = OwnCpuSeconds() - own_;
  const double helped = helpers && helpers_ ? *helpers - *helpers_ : 0;
  if (!busy || !busy_ || seconds <= 0) {
    return absl::StrFormat("other work: unknown (no /proc/stat), over %.1f s", seconds);
  }
  const double others = std::max(0.0, *busy - *busy_ - own - helped) / seconds;
  std::string line = absl::StrFormat(
      "other work: %.2f of %d CPUs on average during the %.1f s (host busy time less the "
      "bench's processes, %.1f CPU s, and its helpers', %.1f CPU s; includes the kernel's "
      "work for the runs: writeback, namespace teardown)",
      others, nproc, seconds, own, helped);
  if (others > kBusyOtherCpus) {
    absl::StrAppend(&line,
                    "\nnote: the host was busy while the bench ran; these numbers say as much "
                    "about the machine as about zygo");
  }
  return line;
}

}  // namespace zygo::bench
