// Takes a fresh fork's copy-on-write faults ahead of demand: every page the child still
// shares with the zygote in a private writable mapping is write-faulted now, so the
// request path finds its memory already private. Resumable in slices, so a spare can do it
// while idle and stop the moment a request arrives.
#ifndef ZYGO_AGENTS_PYTHON_PREFAULT_H_
#define ZYGO_AGENTS_PYTHON_PREFAULT_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/base/unique_fd.h"

namespace zygo::agents::python {

struct PrefaultStats {
  size_t mappings = 0;       // Private writable mappings listed.
  size_t pages_present = 0;  // Pages found present in them so far.
  size_t pages_touched = 0;  // Of those, the ones still shared (each took one COW fault).
  absl::Duration elapsed;    // Time spent inside Start and Step.
  bool done = false;         // Every mapping walked.
};

// Lists /proc/self/maps' private writable mappings (heap, anonymous memory, .data/.bss,
// the stack) and walks them with /proc/self/pagemap: a page present but not exclusively
// mapped is still shared and gets write-faulted (MADV_POPULATE_WRITE on runs of such
// pages; where the kernel predates it, one byte written back to itself). Pages never
// touched are left alone: writing them would turn untouched reservations (Python arenas,
// malloc's heap top) into real memory. Child side, single-threaded, right after fork;
// needs no privileges (pagemap flags are readable by the process itself).
class Prefaulter {
 public:
  static absl::StatusOr<Prefaulter> Start();

  // Faults up to `max_pages` more shared pages; stats().done once the walk is over.
  absl::Status Step(size_t max_pages);

  const PrefaultStats& stats() const { return stats_; }

 private:
  struct Mapping {
    uintptr_t start;
    uintptr_t end;
  };
  Prefaulter() = default;

  std::vector<Mapping> mappings_;
  size_t mapping_ = 0;  // The mapping being walked.
  uintptr_t next_ = 0;  // Its next page to look at.
  base::UniqueFd pagemap_;
  uintptr_t page_size_ = 4096;
  PrefaultStats stats_;
};

// The whole walk in one go.
absl::StatusOr<PrefaultStats> PrefaultPrivateMemory();

}  // namespace zygo::agents::python

#endif  // ZYGO_AGENTS_PYTHON_PREFAULT_H_
