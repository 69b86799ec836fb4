// How much other work ran on the host while a benchmark measured: the host's busy CPU
// time less the benchmark's own (its children included) and that of helpers that are
// not its children (a registry). Parent side; reads /proc, needs no privileges.
#ifndef ZYGO_BENCH_COMMON_OTHER_WORK_H_
#define ZYGO_BENCH_COMMON_OTHER_WORK_H_

#include <chrono>
#include <functional>
#include <optional>
#include <string>

namespace zygo::bench {

class OtherWork {
 public:
  // Starts observing now. `helper_cpu` returns the CPU seconds the helpers have used so
  // far (nullopt if unknown); it may be empty when there are none.
  explicit OtherWork(std::function<std::optional<double>()> helper_cpu);

  // "other work: 0.59 of 2 CPUs on average during the 0.7 s (host busy time less the
  // bench's processes, 0.5 CPU s, and its helpers', 0.1 CPU s; ...)" up to now, and a
  // second line, a note, when other work used more than half a CPU.
  std::string Line(int nproc) const;

 private:
  std::function<std::optional<double>()> helper_cpu_;
  std::optional<double> busy_;
  double own_;
  std::optional<double> helpers_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace zygo::bench

#endif  // ZYGO_BENCH_COMMON_OTHER_WORK_H_
