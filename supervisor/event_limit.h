// The one limit on an event's size, whichever way it reaches a function (HTTP, gRPC, the
// service core), and the error every one of them gives past it.
#ifndef ZYGO_SUPERVISOR_EVENT_LIMIT_H_
#define ZYGO_SUPERVISOR_EVENT_LIMIT_H_

#include <cstddef>
#include <cstdint>
#include <optional>

#include "absl/status/status.h"

namespace zygo::supervisor {

// A Python function's event (its JSON text) or a warm-exec function's stdin: 16 MiB. Well
// above the 6 MB of an AWS Lambda synchronous invoke, so events made for Lambda fit; what
// the HTTP API has always taken, so no caller that worked before is refused now; and small
// enough that the few copies a request makes on its way (body, request, Run) stay modest
// beside the 64 running requests. Events past a wire frame travel in a sealed memfd.
inline constexpr size_t kMaxEventBytes = size_t{16} << 20;

// ResourceExhausted "event is N bytes; the limit is M bytes", marked so that a front end
// tells it from being over capacity (HTTP answers it 413, not 429): IsEventTooLarge. A
// `size` of nullopt is a body whose size is not known yet (HTTP chunked): "event is more
// than M bytes; the limit is M bytes".
absl::Status EventTooLargeError(std::optional<uint64_t> size);
bool IsEventTooLarge(const absl::Status& status);

// OK when both the event and stdin of one request are within kMaxEventBytes; else the
// error for the larger.
absl::Status CheckEventSize(size_t event_bytes, size_t stdin_bytes);

}  // namespace zygo::supervisor

#endif  // ZYGO_SUPERVISOR_EVENT_LIMIT_H_
