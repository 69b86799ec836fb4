// Filling the small-object allocator's free blocks (see the header).
#include "agents/python/allocator_holes.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <sstream>
#include <vector>

#include "core/base/errno_status.h"
#include "core/base/unique_fd.h"

namespace zygo::agents::python {

std::map<size_t, int64_t> ParseAvailableBlocks(const std::string& stats) {
  std::map<size_t, int64_t> available;
  std::istringstream lines(stats);
  std::string line;
  bool in_table = false;
  while (std::getline(lines, line)) {
    if (line.rfind("-----", 0) == 0) {
      in_table = true;
      continue;
    }
    if (!in_table) continue;
    std::istringstream fields(line);
    int64_t size_class = 0, size = 0, pools = 0, in_use = 0, avail = 0;
    if (!(fields >> size_class >> size >> pools >> in_use >> avail)) break;  // the table ended
    if (size > 0 && avail > 0) available[static_cast<size_t>(size)] = avail;
  }
  return available;
}

absl::StatusOr<int64_t> FillAllocatorHoles(const PythonApi& api) {
  base::UniqueFd capture(::memfd_create("zygo-mallocstats", MFD_CLOEXEC));
  if (!capture.valid()) return base::ErrnoStatus(errno, "memfd_create(mallocstats)");
  base::UniqueFd saved(::fcntl(2, F_DUPFD_CLOEXEC, 3));
  if (!saved.valid()) return base::ErrnoStatus(errno, "dup(2)");
  PyObject* stats_call = api.PySys_GetObject("_debugmallocstats");  // Borrowed.
  if (stats_call == nullptr) return absl::UnimplementedError("no sys._debugmallocstats");
  if (::dup2(capture.get(), 2) < 0) return base::ErrnoStatus(errno, "dup2(memfd, 2)");
  PyObject* done = api.PyObject_CallObject(stats_call, nullptr);
  ::dup2(saved.get(), 2);
  if (done == nullptr) {
    api.PyErr_Clear();
    return absl::InternalError("sys._debugmallocstats() failed");
  }
  api.Py_DecRef(done);
  std::string text;
  char buffer[4096];
  for (off_t at = 0;;) {
    const ssize_t n = ::pread(capture.get(), buffer, sizeof(buffer), at);
    if (n <= 0) break;
    text.append(buffer, static_cast<size_t>(n));
    at += n;
  }
  int64_t taken = 0;
  for (const auto& [size, blocks] : ParseAvailableBlocks(text)) {
    for (int64_t i = 0; i < blocks; ++i) {
      if (api.PyObject_Malloc(size) == nullptr) break;
      taken += static_cast<int64_t>(size);
    }
  }
  return taken;
}

}  // namespace zygo::agents::python
