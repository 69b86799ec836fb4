// The copy-on-write prefault: /proc/self/maps for the mappings, /proc/self/pagemap for
// which pages are still shared.
#include "agents/python/prefault.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/base/errno_status.h"

namespace zygo::agents::python {
namespace {

using base::ErrnoStatus;
using base::UniqueFd;

// Documentation/admin-guide/mm/pagemap.rst.
constexpr uint64_t kPagePresent = 1ULL << 63;
constexpr uint64_t kPageExclusive = 1ULL << 56;  // Mapped only by this process (4.2+).
constexpr size_t kBatch = 512;                   // pagemap entries per pread.

absl::StatusOr<std::string> ReadWhole(const char* path) {
  UniqueFd fd(::open(path, O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoStatus(errno, absl::StrCat("open(", path, ")"));
  std::string text;
  char buffer[16384];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoStatus(errno, absl::StrCat("read(", path, ")"));
    if (n == 0) return text;
    text.append(buffer, static_cast<size_t>(n));
  }
}

// Breaks the sharing of runs of adjacent pages. MADV_POPULATE_WRITE (5.14+) takes the
// write faults inside the kernel, one call per run instead of one trap per page; older
// kernels get the same value written back to one byte of each page, which is what breaks
// the sharing.
class RunWriter {
 public:
  explicit RunWriter(uintptr_t page_size) : page_size_(page_size) {}
  ~RunWriter() { Flush(); }

  void Add(uintptr_t page) {
    if (end_ != page) Flush();
    if (start_ == end_) start_ = page;
    end_ = page + page_size_;
  }

  void Flush() {
    if (start_ == end_) return;
    if (::madvise(reinterpret_cast<void*>(start_), end_ - start_, MADV_POPULATE_WRITE) != 0) {
      for (uintptr_t page = start_; page < end_; page += page_size_) {
        volatile char* byte = reinterpret_cast<volatile char*>(page);
        *byte = *byte;
      }
    }
    start_ = end_ = 0;
  }

 private:
  const uintptr_t page_size_;
  uintptr_t start_ = 0;
  uintptr_t end_ = 0;
};

}  // namespace

absl::StatusOr<Prefaulter> Prefaulter::Start() {
  const absl::Time begin = absl::Now();
  Prefaulter prefaulter;
  prefaulter.page_size_ = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  // Listed in full before touching anything: the walk itself must not change the list.
  // A mapping gone by the time it is walked reads as not present in pagemap, so nothing
  // is ever written to memory that is no longer mapped.
  absl::StatusOr<std::string> maps = ReadWhole("/proc/self/maps");
  if (!maps.ok()) return maps.status();
  for (absl::string_view line : absl::StrSplit(*maps, '\n', absl::SkipEmpty())) {
    unsigned long start = 0;
    unsigned long end = 0;
    char perms[5] = {};
    const std::string text(line.substr(0, 64));
    // "start-end perms ...": keeps "rw?p". vsyscall/vvar/vdso and guard regions ("---p")
    // are never writable.
    if (std::sscanf(text.c_str(), "%lx-%lx %4s", &start, &end, perms) != 3) continue;
    if (perms[0] == 'r' && perms[1] == 'w' && perms[3] == 'p' && end > start) {
      prefaulter.mappings_.push_back({start, end});
    }
  }
  prefaulter.pagemap_ = UniqueFd(::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC));
  if (!prefaulter.pagemap_.valid()) return ErrnoStatus(errno, "open(/proc/self/pagemap)");
  prefaulter.stats_.mappings = prefaulter.mappings_.size();
  prefaulter.next_ = prefaulter.mappings_.empty() ? 0 : prefaulter.mappings_[0].start;
  prefaulter.stats_.done = prefaulter.mappings_.empty();
  prefaulter.stats_.elapsed = absl::Now() - begin;
  return prefaulter;
}

absl::Status Prefaulter::Step(size_t max_pages) {
  const absl::Time begin = absl::Now();
  RunWriter writer(page_size_);
  uint64_t entries[kBatch];
  size_t touched = 0;
  while (!stats_.done && touched < max_pages) {
    const Mapping& mapping = mappings_[mapping_];
    const size_t count = std::min<size_t>(kBatch, (mapping.end - next_) / page_size_);
    const off_t offset = static_cast<off_t>(next_ / page_size_ * sizeof(uint64_t));
    const ssize_t n =
        count == 0 ? 0 : ::pread(pagemap_.get(), entries, count * sizeof(uint64_t), offset);
    if (n < 0) return ErrnoStatus(errno, "pread(/proc/self/pagemap)");
    const size_t got = static_cast<size_t>(n) / sizeof(uint64_t);
    size_t i = 0;
    for (; i < got && touched < max_pages; ++i) {
      if ((entries[i] & kPagePresent) == 0) continue;
      ++stats_.pages_present;
      if ((entries[i] & kPageExclusive) != 0) continue;
      writer.Add(next_ + i * page_size_);
      ++touched;
    }
    next_ += i * page_size_;
    if (got == 0 || next_ >= mapping.end) {
      writer.Flush();  // Runs never span mappings.
      if (++mapping_ == mappings_.size()) {
        stats_.done = true;
      } else {
        next_ = mappings_[mapping_].start;
      }
    }
  }
  writer.Flush();
  stats_.pages_touched += touched;
  stats_.elapsed += absl::Now() - begin;
  return absl::OkStatus();
}

absl::StatusOr<PrefaultStats> PrefaultPrivateMemory() {
  absl::StatusOr<Prefaulter> prefaulter = Prefaulter::Start();
  if (!prefaulter.ok()) return prefaulter.status();
  while (!prefaulter->stats().done) {
    if (absl::Status status = prefaulter->Step(SIZE_MAX); !status.ok()) return status;
  }
  return prefaulter->stats();
}

}  // namespace zygo::agents::python
