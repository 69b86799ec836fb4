#include "core/init_binary.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mutex>

#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "core/base/sys/fs.h"
#include "core/base/unique_fd.h"

namespace zygo::core {
namespace init {
extern const unsigned char kZygoInit[];
extern const size_t kZygoInit_size;
}  // namespace init
namespace {

// Linux 6.3's names, missing from Debian 12's headers.
constexpr unsigned kMfdExec = 0x0010U;

absl::StatusOr<base::UniqueFd> MakeInitMemfd() {
  // MFD_EXEC asks for an executable memfd where vm.memfd_noexec makes them noexec by
  // default; kernels before 6.3 do not know the flag (EINVAL), and every memfd is
  // executable there.
  base::UniqueFd fd(memfd_create("zygo-init", MFD_CLOEXEC | MFD_ALLOW_SEALING | kMfdExec));
  if (!fd.valid() && errno == EINVAL) {
    fd.Reset(memfd_create("zygo-init", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  }
  if (!fd.valid()) {
    if (errno == EACCES) {
      return absl::FailedPreconditionError(
          "memfd_create(zygo-init, MFD_EXEC): refused (EACCES): this host sets "
          "vm.memfd_noexec = 2, which forbids the executable memfd a sandbox's init runs from");
    }
    return base::ErrnoStatus(errno, "memfd_create(zygo-init)");
  }
  ZYGO_RETURN_IF_ERROR(
      base::sys::WriteAll(fd, init::kZygoInit, init::kZygoInit_size, "zygo-init memfd"));
  if (fchmod(fd.get(), 0111) != 0) return base::ErrnoStatus(errno, "fchmod(zygo-init memfd, 0111)");
  if (fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE) != 0) {
    return base::ErrnoStatus(errno, "fcntl(zygo-init memfd, F_ADD_SEALS)");
  }
  return fd;
}

}  // namespace

absl::StatusOr<int> InitBinaryFd() {
  static std::once_flag once;
  static absl::StatusOr<base::UniqueFd>* made = nullptr;
  std::call_once(once, [] { made = new absl::StatusOr<base::UniqueFd>(MakeInitMemfd()); });
  if (!made->ok()) return made->status();
  return (*made)->get();
}

}  // namespace zygo::core
