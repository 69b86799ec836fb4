#include "supervisor/log.h"

#include <errno.h>
#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"

namespace zygo::supervisor {
namespace {

const char* LevelPrefix(LogLevel level) {
  switch (level) {
    case LogLevel::kInfo:
    case LogLevel::kError:
      return "";
    case LogLevel::kWarning:
      return "warning: ";
  }
  return "";
}

// One write(2) for all of `text` unless stderr takes it in parts (a pipe's capacity).
void WriteAll(absl::string_view text) {
  while (!text.empty()) {
    ssize_t n = ::write(STDERR_FILENO, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // nowhere to say it
    text.remove_prefix(static_cast<size_t>(n));
  }
}

void WriteLine(std::string line) {
  if (line.empty() || line.back() != '\n') line.push_back('\n');
  WriteAll(line);
}

}  // namespace

void Log(LogLevel level, absl::string_view message) {
  WriteLine(absl::StrCat("zygo serve: ", LevelPrefix(level), message));
}

void LogFor(absl::string_view function, LogLevel level, absl::string_view message) {
  WriteLine(absl::StrCat("[", function, "] ", LevelPrefix(level), message));
}

void LogOutputOf(absl::string_view function, absl::string_view text) {
  WriteAll(absl::StrCat("[", function, "] ", text));
}

}  // namespace zygo::supervisor
