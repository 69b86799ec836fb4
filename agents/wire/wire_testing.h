// Test helpers for the wire protocol: fd accounting and raw datagram injection.
#ifndef ZYGO_AGENTS_WIRE_WIRE_TESTING_H_
#define ZYGO_AGENTS_WIRE_WIRE_TESTING_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace zygo::wire::testing {

// The number of entries in /proc/self/fd (excluding the directory's own fd), or -1.
int CountOpenFds();

// Sends `bytes` as one raw datagram with `fds` attached, bypassing every check SendFrame
// makes, to feed ReceiveFrame malformed input.
absl::Status SendRawDatagram(int fd, absl::string_view bytes, absl::Span<const int> fds);

// Whether `fd` has FD_CLOEXEC set.
bool IsCloexec(int fd);

}  // namespace zygo::wire::testing

#endif  // ZYGO_AGENTS_WIRE_WIRE_TESTING_H_
