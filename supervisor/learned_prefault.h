// What a zygote's spares take ahead of their requests: the pages its first children touched
// (their Touched reports, merged), sent to each new spare as one Prefault. A request then
// finds its memory already copied and its code already mapped, instead of taking ~40 page
// faults at ~2.2 us each (a small handler on these VMs). The reports come from inside the
// sandbox and are not trusted: the merged set is capped (a spare's own request cgroup pays
// for what it takes, and a request under a small memory limit must not lose it to pages
// it may never touch), and each spare skips what it does not have mapped. Thread-safe.
#ifndef ZYGO_SUPERVISOR_LEARNED_PREFAULT_H_
#define ZYGO_SUPERVISOR_LEARNED_PREFAULT_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "agents/wire/frame.h"
#include "agents/wire/messages.h"

namespace zygo::supervisor {

class LearnedPrefault {
 public:
  // Learned from this many children's reports; later children are not asked.
  static constexpr int kReports = 2;
  // At most this much memory per spare, and at most a quarter of a request's memory limit.
  // (The sixteen-import handler's set is 0.6 MiB; 2,048 pages take ~4.5 ms to copy.)
  static constexpr uint64_t kMaxBytes = uint64_t{8} << 20;

  // `memory_limit_bytes`: a request's memory limit (0: none).
  explicit LearnedPrefault(int64_t memory_limit_bytes);

  // Whether the next request's child should report the pages it touched.
  bool WantsReport() const;
  // Merges one child's report into the set.
  void Learn(const std::vector<wire::PageRun>& touched);
  // The Prefault frame for a new spare; null until something was learned.
  std::shared_ptr<const wire::Frame> frame() const;

  uint64_t max_pages() const { return max_pages_; }

 private:
  const uint64_t max_pages_;
  mutable std::mutex mu_;
  int reports_ = 0;
  std::vector<wire::PageRun> runs_;  // sorted by start, merged, capped
  std::shared_ptr<const wire::Frame> frame_;
};

// Sorted by start, adjacent or overlapping runs of the same kind merged, then cut to
// `max_pages` pages and wire::kMaxPageRuns runs (lowest addresses kept).
std::vector<wire::PageRun> MergePageRuns(std::vector<wire::PageRun> runs, uint64_t max_pages);

}  // namespace zygo::supervisor

#endif  // ZYGO_SUPERVISOR_LEARNED_PREFAULT_H_
