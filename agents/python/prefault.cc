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

// "start-end perms ...": private writable mappings (heap, anonymous memory, .data/.bss,
// the stack). Code and read-only data are left out: a request maps only a few such pages
// itself (the spare's start-up already mapped most, with fault-around), and mapping the
// ~1,100 a child had present cost each spare 0.4 ms, enough to lower the throughput of
// `zygo bench load` from 1,047 to 935 requests/s.
bool PrivateWritable(absl::string_view line, uintptr_t* start, uintptr_t* end) {
  unsigned long from = 0, to = 0;
  char perms[5] = {};
  const std::string head(line.substr(0, 64));
  if (std::sscanf(head.c_str(), "%lx-%lx %4s", &from, &to, perms) != 3 || to <= from) {
    return false;
  }
  *start = from;
  *end = to;
  return perms[0] == 'r' && perms[1] == 'w' && perms[3] == 'p';
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

absl::StatusOr<std::vector<wire::PageRun>> ScanTouchedPages() {
  // Listed in full before reading pagemap: the scan's own allocations must not change it.
  absl::StatusOr<std::string> maps = base::sys::ReadFile("/proc/self/maps");
  if (!maps.ok()) return maps.status();
  UniqueFd pagemap(::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC));
  if (!pagemap.valid()) return ErrnoStatus(errno, "open(/proc/self/pagemap)");
  const uintptr_t page_size = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  if (page_size != wire::kPageBytes) return std::vector<wire::PageRun>{};
  RunCollector collector;
  uint64_t entries[kBatch];
  for (absl::string_view line : absl::StrSplit(*maps, '\n', absl::SkipEmpty())) {
    uintptr_t start = 0, end = 0;
    if (!PrivateWritable(line, &start, &end)) continue;
    for (uintptr_t page = start; page < end;) {
      const size_t count = std::min<size_t>(kBatch, (end - page) / page_size);
      const ssize_t n = ::pread(pagemap.get(), entries, count * sizeof(uint64_t),
                                static_cast<off_t>(page / page_size * sizeof(uint64_t)));
      if (n <= 0) break;  // Gone since maps was read: nothing more of it.
      const size_t got = static_cast<size_t>(n) / sizeof(uint64_t);
      for (size_t i = 0; i < got; ++i) {
        const bool touched = (entries[i] & kPagePresent) != 0 && (entries[i] & kPageExclusive) != 0;
        if (touched && !collector.Add(page + i * page_size, /*write=*/true)) {
          return collector.Take();
        }
      }
      page += got * page_size;
    }
  }
  return collector.Take();
}

size_t PopulatePages(const std::vector<wire::PageRun>& runs, const std::function<bool()>& stop) {
  size_t taken = 0;
  for (const wire::PageRun& run : runs) {
    const int advice = run.write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ;
    for (uint64_t done = 0; done < run.pages; done += kPopulateSlicePages) {
      if (stop()) return taken;
      const uint64_t pages = std::min<uint64_t>(kPopulateSlicePages, run.pages - done);
      void* start = reinterpret_cast<void*>(run.start + done * wire::kPageBytes);
      if (::madvise(start, pages * wire::kPageBytes, advice) != 0) break;  // not all mapped
      taken += pages;
    }
  }
  return taken;
}

}  // namespace zygo::agents::python
