// The supervisor's own messages on stderr (its log under systemd): one line each, written
// with one write(2) so lines from different threads never interleave.
//   zygo serve: hello is warm (6.2 ms)               Log(kInfo, ...)
//   zygo serve: warning: kept the stale cgroup ...   Log(kWarning, ...)
//   [hello] cannot admit a spare: ...                LogFor("hello", ...)
#ifndef ZYGO_SUPERVISOR_LOG_H_
#define ZYGO_SUPERVISOR_LOG_H_

#include "absl/strings/string_view.h"

namespace zygo::supervisor {

enum class LogLevel {
  kInfo,     // what happened: a function warmed, the supervisor stops
  kWarning,  // something was left or degraded, and the supervisor goes on
  kError,    // something failed (a function could not warm); the supervisor goes on
};

void Log(LogLevel level, absl::string_view message);
// A message about one function, prefixed with its name.
void LogFor(absl::string_view function, LogLevel level, absl::string_view message);
// What a function's sandbox printed (its agent's stdout and stderr), as it came, prefixed
// with the function's name; `text` need not end in a newline.
void LogOutputOf(absl::string_view function, absl::string_view text);

}  // namespace zygo::supervisor

#endif  // ZYGO_SUPERVISOR_LOG_H_
