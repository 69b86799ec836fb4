// A spare writing itself into its request cgroup.
#include "agents/wire/join.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "agents/wire/channel.h"
#include "agents/wire/messages.h"
#include "core/base/errno_status.h"

namespace zygo::wire {
namespace {

absl::Status JoinFiles(ReceivedFrame& join) {
  if (absl::StatusOr<JoinMessage> decoded = DecodeJoin(join); !decoded.ok()) {
    return decoded.status();
  }
  for (size_t i = 0; i < join.fds.size(); ++i) {
    const ssize_t written = base::RetryOnEintr([&] { return ::write(join.fds[i].get(), "0", 1); });
    if (written != 1) {
      return absl::PermissionDeniedError(
          absl::StrCat("cannot join file ", i + 1, " of ", join.fds.size(), ": ",
                       written < 0 ? strerror(errno) : "short write"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status AnswerJoin(int channel, ReceivedFrame& join) {
  absl::Status joined = JoinFiles(join);
  join.fds.clear();  // Closed, so nothing later in this process can write another pid there.
  absl::StatusOr<Frame> answer =
      joined.ok() ? Encode(JoinedMessage{}) : Encode(ErrorFromStatus(0, joined));
  if (!answer.ok()) return answer.status();
  absl::Status sent = SendFrame(channel, *answer, {});
  return joined.ok() ? sent : joined;
}

}  // namespace zygo::wire
