// The child's side of Join (messages.h): every agent's spare answers it the same way.
#ifndef ZYGO_AGENTS_WIRE_JOIN_H_
#define ZYGO_AGENTS_WIRE_JOIN_H_

#include "absl/status/status.h"
#include "agents/wire/frame.h"

namespace zygo::wire {

// Writes "0" into each of the Join's files (the calling thread moves itself into that
// cgroup), closes them and sends Joined on `channel`; on a bad frame or a failed write it
// sends Error instead and returns the failure. The caller must be single-threaded: a
// thread's move does not take its process's other threads along.
absl::Status AnswerJoin(int channel, ReceivedFrame& join);

}  // namespace zygo::wire

#endif  // ZYGO_AGENTS_WIRE_JOIN_H_
