// Parses the sizes and durations users type: "256m", "1g", "512k", "30s", "1500ms".
#ifndef ZYGO_CORE_UNITS_H_
#define ZYGO_CORE_UNITS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace zygo::core {

// A byte count with an optional b/k/m/g suffix (powers of 1024, case-insensitive, as
// docker's -m). Rejects zero, negative numbers, unknown suffixes and overflow.
absl::StatusOr<int64_t> ParseByteSize(absl::string_view text);

// A duration: a bare number means seconds; suffixes ms, s, m, h. Must be positive.
absl::StatusOr<int64_t> ParseDurationMs(absl::string_view text);

// A positive decimal such as "0.5" or "2" (for --cpus).
absl::StatusOr<double> ParsePositiveDecimal(absl::string_view text);

}  // namespace zygo::core

#endif  // ZYGO_CORE_UNITS_H_
