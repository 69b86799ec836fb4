#include "cli/doctor_proc_text.h"

#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <vector>

#include "absl/strings/str_split.h"

namespace zygo::cli {

bool FileListsPid(const char* path, pid_t pid) {
  char want[16];
  int len = 0;
  for (pid_t rest = pid; rest > 0 && len < 15; rest /= 10) want[len++] = '0' + rest % 10;
  for (int i = 0; i < len / 2; ++i) {
    char c = want[i];
    want[i] = want[len - 1 - i];
    want[len - 1 - i] = c;
  }
  char text[4096];
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  ssize_t n = fd < 0 ? -1 : read(fd, text, sizeof(text));
  if (fd >= 0) close(fd);
  for (ssize_t start = 0; start < n;) {
    ssize_t end = start;
    while (end < n && text[end] != '\n') ++end;
    if (end - start == len && memcmp(text + start, want, static_cast<size_t>(len)) == 0) {
      return true;
    }
    start = end + 1;
  }
  return false;
}

std::string DefaultRouteInterface(absl::string_view route) {
  for (absl::string_view line : absl::StrSplit(route, '\n', absl::SkipEmpty())) {
    std::vector<absl::string_view> fields = absl::StrSplit(line, '\t', absl::SkipEmpty());
    if (fields.size() > 1 && fields[1] == "00000000") return std::string(fields[0]);
  }
  return "";
}

}  // namespace zygo::cli
