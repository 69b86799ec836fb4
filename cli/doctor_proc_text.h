// What doctor's children read back from /proc, judged by the parent: pure text.
#ifndef ZYGO_CLI_DOCTOR_PROC_TEXT_H_
#define ZYGO_CLI_DOCTOR_PROC_TEXT_H_

#include <sys/types.h>

#include <string>

#include "absl/strings/string_view.h"

namespace zygo::cli {

// Whether `pid` is a line of the file at `path` (a cgroup.procs, which lists pids as the
// reader's pid namespace numbers them; the first 4 KiB are read). Async-signal-safe: no
// allocation, for a child to ask where it is.
bool FileListsPid(const char* path, pid_t pid);

// The interface of the default route (destination 00000000) in a /proc/net/route text, or
// "" when there is none.
std::string DefaultRouteInterface(absl::string_view route);

}  // namespace zygo::cli

#endif  // ZYGO_CLI_DOCTOR_PROC_TEXT_H_
