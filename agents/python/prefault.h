// Learned prefault. A child reports, after answering, which pages it touched since its fork
// (ScanTouchedPages); later spares of the same zygote take those pages before their request
// arrives (PopulatePages), so the request does not pay a page fault for each (~2.2 us a
// copy-on-write fault on these VMs; ~40 per request for a small handler). Child side,
// single-threaded; needs no privileges (a process may read its own pagemap flags).
#ifndef ZYGO_AGENTS_PYTHON_PREFAULT_H_
#define ZYGO_AGENTS_PYTHON_PREFAULT_H_

#include <cstddef>
#include <vector>

#include "absl/status/statusor.h"
#include "agents/wire/messages.h"

namespace zygo::agents::python {

// From /proc/self/maps and /proc/self/pagemap: in private writable mappings, the pages
// present and no longer shared with the zygote (copied on write, or new since the fork), as
// write runs. At most wire::kMaxPageRuns runs and wire::kMaxPageRunPages pages.
absl::StatusOr<std::vector<wire::PageRun>> ScanTouchedPages();

// Takes `runs` now: MADV_POPULATE_WRITE for write runs (breaks the sharing with the
// zygote, or allocates), MADV_POPULATE_READ for read runs (maps what the page cache holds;
// the protocol allows them, this agent does not report any).
// A run this process does not have mapped is skipped: madvise refuses it, nothing is
// touched. Returns the pages of the runs it took (kernels before 5.14 take none).
size_t PopulatePages(const std::vector<wire::PageRun>& runs);

}  // namespace zygo::agents::python

#endif  // ZYGO_AGENTS_PYTHON_PREFAULT_H_
