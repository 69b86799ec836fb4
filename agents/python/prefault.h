// Learned prefault. A child reports, after answering, which pages it touched since its fork
// (ScanTouchedPages); later spares of the same zygote take those pages before their request
// arrives (PopulatePages), so the request does not pay a page fault for each (~2.2 us a
// copy-on-write fault on these VMs; ~40 per request for a small handler). Child side,
// single-threaded; needs no privileges (a process may read its own pagemap flags).
#ifndef ZYGO_AGENTS_PYTHON_PREFAULT_H_
#define ZYGO_AGENTS_PYTHON_PREFAULT_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "agents/wire/messages.h"

namespace zygo::agents::python {

// The pages of read-only file mappings (code, read-only data) this process has mapped,
// sorted. A fork does not copy these mappings' page tables, so each child maps what it runs
// anew, 16 pages per fault; taken right before a request, this tells which of them the
// request itself mapped.
using MappedFilePages = std::vector<uintptr_t>;
absl::StatusOr<MappedFilePages> SnapshotMappedFilePages();

// From /proc/self/maps and /proc/self/pagemap: in private writable mappings, the pages
// present and no longer shared with the zygote (copied on write, or new since the fork), as
// write runs; with `before`, also the pages of read-only file mappings mapped since it was
// taken, as read runs. At most wire::kMaxPageRuns runs and wire::kMaxPageRunPages pages.
absl::StatusOr<std::vector<wire::PageRun>> ScanTouchedPages(
    const MappedFilePages* before = nullptr);

// Takes `runs` now: MADV_POPULATE_WRITE for write runs (breaks the sharing with the
// zygote, or allocates), MADV_POPULATE_READ for read runs (maps what the page cache holds).
// A run this process does not have mapped is skipped: madvise refuses it, nothing is
// touched. Works in slices of kPopulateSlicePages and stops as soon as `stop()` says so
// between them (a request has arrived). Returns the pages taken (none before Linux 5.14).
inline constexpr uint64_t kPopulateSlicePages = 16;  // ~35 us of copying here
size_t PopulatePages(
    const std::vector<wire::PageRun>& runs,
    const std::function<bool()>& stop = [] { return false; });

}  // namespace zygo::agents::python

#endif  // ZYGO_AGENTS_PYTHON_PREFAULT_H_
