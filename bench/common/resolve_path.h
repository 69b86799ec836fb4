// A path a bench was given (a tool, a tree), made absolute and checked before any run.
#ifndef ZYGO_BENCH_COMMON_RESOLVE_PATH_H_
#define ZYGO_BENCH_COMMON_RESOLVE_PATH_H_

#include <string>

#include "absl/status/statusor.h"

namespace zygo::bench {

// realpath(path), once access(2) with `mode` (X_OK, R_OK) allows it. Errors name `what`
// (a flag, "--bwrap").
absl::StatusOr<std::string> ResolvePath(const std::string& path, const char* what, int mode);

}  // namespace zygo::bench

#endif  // ZYGO_BENCH_COMMON_RESOLVE_PATH_H_
