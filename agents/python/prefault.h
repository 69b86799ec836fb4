// Takes a fresh fork's copy-on-write faults ahead of demand: every page the child still
// shares with the zygote in a private writable mapping is written back to itself, so the
// request path finds its memory already private.
#ifndef ZYGO_AGENTS_PYTHON_PREFAULT_H_
#define ZYGO_AGENTS_PYTHON_PREFAULT_H_

#include <cstddef>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace zygo::agents::python {

struct PrefaultStats {
  size_t mappings = 0;       // Private writable mappings walked.
  size_t pages_present = 0;  // Pages present in them.
  size_t pages_touched = 0;  // Of those, the ones still shared (each took one COW fault).
  absl::Duration elapsed;
};

// Walks /proc/self/maps; for each private writable mapping (heap, anonymous memory,
// .data/.bss, the stack) reads /proc/self/pagemap and writes one byte of each page that
// is present but not exclusively mapped back to itself. Pages never touched are left
// alone: writing them would turn untouched reservations (Python arenas, malloc's heap
// top) into real memory. Child side, single-threaded, right after fork; needs no
// privileges (pagemap flags are readable by the process itself).
absl::StatusOr<PrefaultStats> PrefaultPrivateMemory();

}  // namespace zygo::agents::python

#endif  // ZYGO_AGENTS_PYTHON_PREFAULT_H_
