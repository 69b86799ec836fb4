#include "core/init/seccomp_listener.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/base/child_report.h"
#include "core/base/sys/seccomp.h"

namespace zygo::core::init {
namespace {

using base::ChildRecordKind;

bool IsForeignAbi(uint32_t arch, int nr) {
  return arch != AUDIT_ARCH_X86_64 || base::sys::IsX32Call(arch, nr);
}

// The thread group of thread `tid` (as this pid namespace numbers it), from
// /proc/TID/status; `tid` itself if that cannot be read.
pid_t ThreadGroupOf(pid_t tid) {
  char path[48] = "/proc/";
  char* end = path + 6;
  char digits[16];
  int n = 0;
  for (unsigned value = static_cast<unsigned>(tid); n == 0 || value > 0; value /= 10) {
    digits[n++] = static_cast<char>('0' + value % 10);
  }
  while (n > 0) *end++ = digits[--n];
  const char kSuffix[] = "/status";
  for (const char* c = kSuffix; *c != '\0'; ++c) *end++ = *c;
  *end = '\0';
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return tid;
  char text[1024];
  ssize_t got = read(fd, text, sizeof(text) - 1);
  close(fd);
  if (got <= 0) return tid;
  text[got] = '\0';
  for (char* line = text; line != nullptr && *line != '\0';) {
    if (line[0] == 'T' && line[1] == 'g' && line[2] == 'i' && line[3] == 'd' && line[4] == ':') {
      long tgid = strtol(line + 5, nullptr, 10);
      return tgid > 0 ? static_cast<pid_t>(tgid) : tid;
    }
    while (*line != '\0' && *line != '\n') ++line;
    if (*line == '\n') ++line;
  }
  return tid;
}

}  // namespace

void SeccompListener::HandleOne() {
  struct seccomp_notif request;
  int rc = base::sys::RawSeccompNotifyReceive(fd_, &request);
  // ENOENT: the caller died (or was killed) before we took its call.
  if (rc < 0) return;
  const int nr = request.data.nr;
  if (IsForeignAbi(request.data.arch, nr)) {
    const pid_t process = ThreadGroupOf(static_cast<pid_t>(request.pid));
    // SIGKILL to one thread ends its whole process; the call stays unanswered and unrun.
    kill(process, SIGKILL);
    base::WriteChildRecord(report_fd_, ChildRecordKind::kSeccompKilled, nr,
                           static_cast<int32_t>(request.data.arch), process);
    return;
  }
  const bool counted = nr >= 0 && nr < kCountedSyscalls;
  ++denied_[counted ? nr : kCountedSyscalls];
  (void)base::sys::RawSeccompNotifyDeny(fd_, request.id, EPERM);
}

void SeccompListener::ReportDenials() const {
  for (int nr = 0; nr <= kCountedSyscalls; ++nr) {
    if (denied_[nr] == 0) continue;
    // -1 names the slot of numbers past the table.
    base::WriteChildRecord(report_fd_, ChildRecordKind::kSeccompDenied,
                           nr < kCountedSyscalls ? nr : -1, 0, static_cast<int32_t>(denied_[nr]));
  }
}

}  // namespace zygo::core::init
