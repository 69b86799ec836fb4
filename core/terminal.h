// The caller's terminal settings, kept across a sandbox that shares the terminal (zygo run
// passes its own stdin, stdout and stderr). A new session keeps the sandbox from pushing
// input into the terminal (TIOCSTI is refused too) and from job control, but not from
// tcsetattr on an fd it holds: `stty -echo` inside would outlive the run. Parent side.
#ifndef ZYGO_CORE_TERMINAL_H_
#define ZYGO_CORE_TERMINAL_H_

#include <termios.h>

#include <vector>

namespace zygo::core {

class TerminalModes {
 public:
  // Saves the modes of each terminal among this process's fds 0, 1 and 2.
  TerminalModes();
  // Restores them (TCSANOW), as they were when saved.
  ~TerminalModes();
  TerminalModes(const TerminalModes&) = delete;
  TerminalModes& operator=(const TerminalModes&) = delete;

 private:
  struct Saved {
    int fd;
    struct termios modes;
  };
  std::vector<Saved> saved_;
};

}  // namespace zygo::core

#endif  // ZYGO_CORE_TERMINAL_H_
