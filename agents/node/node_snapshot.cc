// Building worker.js's startup snapshot into a sealed memfd.
#include "agents/node/node_snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "agents/node/child_exec.h"
#include "agents/node/worker_js.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "core/base/sys/fs.h"

namespace zygo::agents::node {
namespace {

using base::ErrnoStatus;
using base::UniqueFd;

constexpr int kBlobFd = 4;
constexpr size_t kMaxBuilderOutput = 2000;

// Runs `node --snapshot-blob /proc/self/fd/4 --build-snapshot ENTRY` with the blob at fd
// 4 and its stdout and stderr into `output`; its wait status.
absl::StatusOr<int> RunBuilder(const std::string& node, const std::string& entry, int blob,
                               int output) {
  const char* argv[] = {node.c_str(),       "--snapshot-blob", "/proc/self/fd/4",
                        "--build-snapshot", entry.c_str(),     nullptr};
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return ErrnoStatus(errno, "fork(node --build-snapshot)");
  if (pid == 0) {
    const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null < 0) ::_exit(127);
    // Fd 3 is nothing: /dev/null again, so the blob's number is the one the path names.
    const FdMove moves[] = {{null, 0}, {output, 1}, {output, 2}, {null, 3}, {blob, kBlobFd}};
    ExecChild(parent, moves, 5, const_cast<char* const*>(argv));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return ErrnoStatus(errno, "waitpid(node --build-snapshot)");
  }
  return status;
}

// The builder's last output, from the start of its log.
std::string TailOf(const UniqueFd& log) {
  ::lseek(log.get(), 0, SEEK_SET);
  std::string text = base::sys::ReadToEnd(log, "the builder's output").value_or("");
  if (text.size() > kMaxBuilderOutput) text = text.substr(text.size() - kMaxBuilderOutput);
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

// No write, grow or shrink from now on: a request reaches the memfd through its worker's
// fd 4, and every later worker of the function starts from it.
absl::Status SealAgainstWrites(const UniqueFd& memfd) {
  if (::fcntl(memfd.get(), F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) !=
      0) {
    return ErrnoStatus(errno, "fcntl(F_ADD_SEALS)");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<UniqueFd> WorkerSource() {
  UniqueFd source(::memfd_create("zygo-node-worker.js", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!source.valid()) return ErrnoStatus(errno, "memfd_create(worker.js)");
  ZYGO_RETURN_IF_ERROR(base::sys::WriteAll(source, kWorkerJs, ::strlen(kWorkerJs), "worker.js"));
  ZYGO_RETURN_IF_ERROR(SealAgainstWrites(source));
  return source;
}

absl::StatusOr<UniqueFd> BuildWorkerSnapshot(const std::string& node, const std::string& tmp_dir) {
  std::string entry = absl::StrCat(tmp_dir, "/zygo-node-worker-XXXXXX.js");
  UniqueFd source(::mkostemps(entry.data(), 3, O_CLOEXEC));
  if (!source.valid()) return ErrnoStatus(errno, absl::StrCat("mkstemps(", entry, ")"));
  absl::Status written = base::sys::WriteAll(source, kWorkerJs, ::strlen(kWorkerJs), entry);
  source.Reset();
  UniqueFd blob(::memfd_create("zygo-node-snapshot", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  UniqueFd output(::memfd_create("zygo-node-snapshot-log", MFD_CLOEXEC));
  absl::StatusOr<int> status =
      !written.ok()     ? absl::StatusOr<int>(written)
      : !blob.valid()   ? absl::StatusOr<int>(ErrnoStatus(errno, "memfd_create(snapshot)"))
      : !output.valid() ? absl::StatusOr<int>(ErrnoStatus(errno, "memfd_create(log)"))
                        : RunBuilder(node, entry, blob.get(), output.get());
  ::unlink(entry.c_str());
  if (!status.ok()) return status.status();
  if (!WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(node, " --build-snapshot ",
                     WIFEXITED(*status) ? absl::StrCat("exited ", WEXITSTATUS(*status))
                                        : absl::StrCat("was killed by signal ", WTERMSIG(*status)),
                     ": ", TailOf(output)));
  }
  struct stat st;
  if (::fstat(blob.get(), &st) != 0 || st.st_size == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(node, " --build-snapshot wrote no snapshot: ", TailOf(output)));
  }
  ZYGO_RETURN_IF_ERROR(SealAgainstWrites(blob));
  return blob;
}

}  // namespace zygo::agents::node
