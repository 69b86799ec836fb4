// The copy-on-write prefault: /proc/self/maps for the mappings, /proc/self/pagemap for
// which pages are still shared.
#include "agents/python/prefault.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/base/errno_status.h"
#include "core/base/unique_fd.h"

namespace zygo::agents::python {
namespace {

using base::ErrnoStatus;
using base::UniqueFd;

// Documentation/admin-guide/mm/pagemap.rst.
constexpr uint64_t kPagePresent = 1ULL << 63;
constexpr uint64_t kPageExclusive = 1ULL << 56;  // Mapped only by this process (4.2+).

struct Mapping {
  uintptr_t start;
  uintptr_t end;
};

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

// "start-end perms offset dev inode [path]": keeps "rw?p" lines. vsyscall/vvar/vdso are
// never writable, and guard regions ("---p") are not either.
absl::StatusOr<std::vector<Mapping>> PrivateWritableMappings() {
  absl::StatusOr<std::string> maps = ReadWhole("/proc/self/maps");
  if (!maps.ok()) return maps.status();
  std::vector<Mapping> mappings;
  for (absl::string_view line : absl::StrSplit(*maps, '\n', absl::SkipEmpty())) {
    unsigned long start = 0;
    unsigned long end = 0;
    char perms[5] = {};
    const std::string text(line.substr(0, 64));
    if (std::sscanf(text.c_str(), "%lx-%lx %4s", &start, &end, perms) != 3) continue;
    if (perms[0] == 'r' && perms[1] == 'w' && perms[3] == 'p' && end > start) {
      mappings.push_back({start, end});
    }
  }
  return mappings;
}

}  // namespace

absl::StatusOr<PrefaultStats> PrefaultPrivateMemory() {
  const absl::Time begin = absl::Now();
  const uintptr_t page_size = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  // Listed in full before touching anything: the walk itself must not change the list.
  absl::StatusOr<std::vector<Mapping>> mappings = PrivateWritableMappings();
  if (!mappings.ok()) return mappings.status();
  UniqueFd pagemap(::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC));
  if (!pagemap.valid()) return ErrnoStatus(errno, "open(/proc/self/pagemap)");

  PrefaultStats stats;
  stats.mappings = mappings->size();
  constexpr size_t kBatch = 512;
  uint64_t entries[kBatch];
  for (const Mapping& mapping : *mappings) {
    for (uintptr_t page = mapping.start; page < mapping.end;) {
      const size_t count = std::min<size_t>(kBatch, (mapping.end - page) / page_size);
      const off_t offset = static_cast<off_t>(page / page_size * sizeof(uint64_t));
      const ssize_t n = ::pread(pagemap.get(), entries, count * sizeof(uint64_t), offset);
      if (n < 0) return ErrnoStatus(errno, "pread(/proc/self/pagemap)");
      if (n == 0) break;
      const size_t got = static_cast<size_t>(n) / sizeof(uint64_t);
      for (size_t i = 0; i < got; ++i) {
        if ((entries[i] & kPagePresent) == 0) continue;
        ++stats.pages_present;
        if ((entries[i] & kPageExclusive) != 0) continue;
        // The same value back: the write is what breaks the sharing.
        volatile char* byte = reinterpret_cast<volatile char*>(page + i * page_size);
        *byte = *byte;
        ++stats.pages_touched;
      }
      page += got * page_size;
    }
  }
  stats.elapsed = absl::Now() - begin;
  return stats;
}

}  // namespace zygo::agents::python
