#include "core/terminal.h"

#include <sys/stat.h>
#include <unistd.h>

namespace zygo::core {

TerminalModes::TerminalModes() {
  dev_t seen[3] = {};
  int count = 0;
  for (int fd = 0; fd <= 2; ++fd) {
    struct termios modes;
    struct stat st;
    if (tcgetattr(fd, &modes) != 0 || fstat(fd, &st) != 0) continue;
    bool same = false;
    for (int i = 0; i < count; ++i) same = same || seen[i] == st.st_rdev;
    if (same) continue;  // one terminal on several fds is restored once
    seen[count++] = st.st_rdev;
    saved_.push_back({fd, modes});
  }
}

TerminalModes::~TerminalModes() {
  for (const Saved& terminal : saved_) tcsetattr(terminal.fd, TCSANOW, &terminal.modes);
}

}  // namespace zygo::core
