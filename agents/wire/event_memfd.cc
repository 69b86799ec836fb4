// Writing, sealing and reading the memfd that carries a large Run event.
#include "agents/wire/event_memfd.h"

#include <errno.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "agents/wire/messages.h"
#include "core/base/errno_status.h"
#include "core/base/sys/fs.h"

namespace zygo::wire {
namespace {

absl::Status CheckMemfdSize(uint64_t size) {
  if (size == 0 || size > kMaxEventBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("an event memfd of ", size, " bytes; it must be 1..", kMaxEventBytes));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<base::UniqueFd> MakeEventMemfd(absl::string_view content) {
  if (absl::Status size = CheckMemfdSize(content.size()); !size.ok()) return size;
  base::UniqueFd fd(::memfd_create("zygo-event", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd.valid()) return base::ErrnoStatus(errno, "memfd_create(zygo-event)");
  if (absl::Status written = base::sys::WriteAll(fd, content.data(), content.size(), "zygo-event");
      !written.ok()) {
    return written;
  }
  if (::fcntl(fd.get(), F_ADD_SEALS, kEventMemfdSeals) != 0) {
    return base::ErrnoStatus(errno, "fcntl(zygo-event, F_ADD_SEALS)");
  }
  return fd;
}

absl::StatusOr<std::string> ReadEventMemfd(int fd, uint64_t size) {
  if (absl::Status checked = CheckMemfdSize(size); !checked.ok()) return checked;
  const int seals = ::fcntl(fd, F_GET_SEALS);
  if (seals < 0) return base::ErrnoStatus(errno, "fcntl(event fd, F_GET_SEALS)");
  if ((seals & kEventMemfdSeals) != kEventMemfdSeals) {
    return absl::InvalidArgumentError(absl::StrCat("the event memfd has seals 0x", absl::Hex(seals),
                                                   ", not 0x", absl::Hex(kEventMemfdSeals)));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) return base::ErrnoStatus(errno, "fstat(event fd)");
  if (static_cast<uint64_t>(st.st_size) != size) {
    return absl::InvalidArgumentError(
        absl::StrCat("the event memfd holds ", st.st_size, " bytes, the Run says ", size));
  }
  std::string out(size, '\0');
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = base::RetryOnEintr([&] {
      return ::pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(done));
    });
    if (n <= 0) {
      return base::ErrnoStatus(n < 0 ? errno : EIO, absl::StrCat("pread(event fd, ", size, ")"));
    }
    done += static_cast<size_t>(n);
  }
  return out;
}

}  // namespace zygo::wire
