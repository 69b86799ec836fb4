// The learned prefault: /proc/self/maps for the mappings, /proc/self/pagemap for which of
// their pages this process wrote, madvise(MADV_POPULATE_WRITE) to take them in a later spare.
#include "agents/python/prefault.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/base/errno_status.h"
#include "core/base/sys/fs.h"
#include "core/base/unique_fd.h"

namespace zygo::agents::python {
namespace {

using base::ErrnoStatus;
using base::UniqueFd;

// Documentation/admin-guide/mm/pagemap.rst.
constexpr uint64_t kPagePresent = 1ULL << 63;
constexpr uint64_t kPageExclusive = 1ULL << 56;  // Mapped only by this process (4.2+).
constexpr size_t kBatch = 512;                   // pagemap entries per pread.

enum class MappingKind { kOther, kPrivateWritable, kReadOnlyFile };

// "start-end perms offset dev inode path". Private writable mappings: the heap, anonymous
// memory, .data/.bss, the stack. Read-only file mappings: code and read-only data, whose
// present pages are all reported only when the caller has a snapshot to subtract; mapping
// all ~1,100 a child had present cost each spare 0.4 ms, enough to lower the throughput of
// `zygo bench load` from 1,047 to 935 requests/s, while a request maps only ~7 of its own.
MappingKind KindOf(absl::string_view line, uintptr_t* start, uintptr_t* end) {
  unsigned long from = 0, to = 0, inode = 0;
  char perms[5] = {};
  const std::string head(line.substr(0, 128));
  if (std::sscanf(head.c_str(), "%lx-%lx %4s %*s %*s %lu", &from, &to, perms, &inode) != 4 ||
      to <= from || perms[0] != 'r' || perms[3] != 'p') {
    return MappingKind::kOther;
  }
  *start = from;
  *end = to;
  if (perms[1] == 'w') return MappingKind::kPrivateWritable;
  return inode != 0 ? MappingKind::kReadOnlyFile : MappingKind::kOther;
}

// Calls `each(kind, page, entry)` for every page of the mappings in `maps` whose kind is
// one of `kinds`, with its pagemap entry, in address order. Stops early when `each` returns
// false.
template <typename Each>
absl::Status ForEachPage(absl::string_view maps, const std::vector<MappingKind>& kinds, Each each) {
  UniqueFd pagemap(::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC));
  if (!pagemap.valid()) return ErrnoStatus(errno, "open(/proc/self/pagemap)");
  const uintptr_t page_size = wire::kPageBytes;
  uint64_t entries[kBatch];
  for (absl::string_view line : absl::StrSplit(maps, '\n', absl::SkipEmpty())) {
    uintptr_t start = 0, end = 0;
    const MappingKind kind = KindOf(line, &start, &end);
    if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) continue;
    for (uintptr_t page = start; page < end;) {
      const size_t count = std::min<size_t>(kBatch, (end - page) / page_size);
      const ssize_t n = ::pread(pagemap.get(), entries, count * sizeof(uint64_t),
                                static_cast<off_t>(page / page_size * sizeof(uint64_t)));
      if (n <= 0) break;  // Gone since maps was read: nothing more of it.
      const size_t got = static_cast<size_t>(n) / sizeof(uint64_t);
      for (size_t i = 0; i < got; ++i) {
        if (!each(kind, page + i * page_size, entries[i])) return absl::OkStatus();
      }
      page += got * page_size;
    }
  }
  return absl::OkStatus();
}

bool PageSizeIsTheWires() {
  return static_cast<uint64_t>(::sysconf(_SC_PAGESIZE)) == wire::kPageBytes;
}

// Collects runs, merging a page into the previous run when it continues it.
class RunCollector {
 public:
  // False once a limit is reached: the rest is not collected.
  bool Add(uintptr_t page, bool write) {
    if (!runs_.empty()) {
      wire::PageRun& last = runs_.back();
      if (last.write == write && last.start + uint64_t{last.pages} * wire::kPageBytes == page) {
        if (pages_ == wire::kMaxPageRunPages) return false;
        ++last.pages;
        ++pages_;
        return true;
      }
    }
    if (runs_.size() == wire::kMaxPageRuns || pages_ == wire::kMaxPageRunPages) return false;
    runs_.push_back({page, 1, write});
    ++pages_;
    return true;
  }
  std::vector<wire::PageRun> Take() { return std::move(runs_); }

 private:
  std::vector<wire::PageRun> runs_;
  uint64_t pages_ = 0;
};

}  // namespace

absl::StatusOr<MappedFilePages> SnapshotMappedFilePages() {
  MappedFilePages pages;
  if (!PageSizeIsTheWires()) return pages;
  absl::StatusOr<std::string> maps = base::sys::ReadFile("/proc/self/maps");
  if (!maps.ok()) return maps.status();
  absl::Status scanned = ForEachPage(*maps, {MappingKind::kReadOnlyFile},
                                     [&](MappingKind, uintptr_t page, uint64_t entry) {
                                       if ((entry & kPagePresent) != 0) pages.push_back(page);
                                       return true;
                                     });
  if (!scanned.ok()) return scanned;
  return pages;  // in address order, as /proc/self/maps lists the mappings
}

absl::StatusOr<std::vector<wire::PageRun>> ScanTouchedPages(const MappedFilePages* before) {
  if (!PageSizeIsTheWires()) return std::vector<wire::PageRun>{};
  // Listed in full before reading pagemap: the scan's own allocations must not change it.
  absl::StatusOr<std::string> maps = base::sys::ReadFile("/proc/self/maps");
  if (!maps.ok()) return maps.status();
  RunCollector collector;
  // One pass in address order; read-only file mappings only with a snapshot to subtract.
  std::vector<MappingKind> kinds = {MappingKind::kPrivateWritable};
  if (before != nullptr) kinds.push_back(MappingKind::kReadOnlyFile);
  absl::Status scanned =
      ForEachPage(*maps, kinds, [&](MappingKind kind, uintptr_t page, uint64_t entry) {
        if ((entry & kPagePresent) == 0) return true;
        if (kind == MappingKind::kPrivateWritable) {
          // Copied on write or new since the fork; a page still shared is not exclusive.
          return (entry & kPageExclusive) == 0 || collector.Add(page, /*write=*/true);
        }
        // Mapped by this process since the snapshot.
        return std::binary_search(before->begin(), before->end(), page) ||
               collector.Add(page, /*write=*/false);
      });
  if (!scanned.ok()) return scanned;
  return collector.Take();
}

size_t PopulatePages(const std::vector<wire::PageRun>& runs, const std::function<bool()>& stop) {
  size_t taken = 0;
  // Asked before the first slice and after each kPopulateSlicePages pages, not per run: a
  // learned set is mostly one-page runs, and a check per run was a poll(2) per page.
  uint64_t unchecked = kPopulateSlicePages;
  for (const wire::PageRun& run : runs) {
    const int advice = run.write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ;
    for (uint64_t done = 0; done < run.pages;) {
      if (unchecked >= kPopulateSlicePages) {
        if (stop()) return taken;
        unchecked = 0;
      }
      const uint64_t pages = std::min<uint64_t>(kPopulateSlicePages - unchecked, run.pages - done);
      void* start = reinterpret_cast<void*>(run.start + done * wire::kPageBytes);
      if (::madvise(start, pages * wire::kPageBytes, advice) != 0) break;  // not all mapped
      taken += pages;
      done += pages;
      unchecked += pages;
    }
  }
  return taken;
}

}  // namespace zygo::agents::python
