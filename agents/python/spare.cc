// The spare's start-up, isolation, prefault and wait for Run.
#include "agents/python/spare.h"

#include <errno.h>
#include <poll.h>
#include <unistd.h>

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "agents/isolation/isolation.h"
#include "agents/python/prefault.h"
#include "agents/wire/channel.h"
#include "agents/wire/join.h"
#include "agents/wire/messages.h"
#include "core/base/sys/sched_attr.h"

namespace zygo::agents::python {

// No flush of sys.stdout/stderr here: they are unbuffered (Interpreter::Start), and the
// zygote flushed them after the handler's import, the last Python code of its own to run.
void PythonSpareRunner::BeforeFork() { interpreter_.api().PyOS_BeforeFork(); }

void PythonSpareRunner::AfterForkInParent() { interpreter_.api().PyOS_AfterFork_Parent(); }

absl::Status PythonSpareRunner::Isolate(uint64_t spare_id) {
  absl::StatusOr<isolation::IsolatedSpare> isolated = isolation::IsolateSpare(spare_id, landlock_);
  if (!isolated.ok()) return isolated.status();
  if (absl::Status status = interpreter_.PointTempDirAt(isolated->tmp_dir); !status.ok()) {
    return status;
  }
  if (verbose_) {
    std::fprintf(stderr, "zygo-agent-python: spare %llu: landlock abi %d\n",
                 static_cast<unsigned long long>(spare_id), isolated->landlock_abi);
  }
  return absl::OkStatus();
}

void PythonSpareRunner::RunSpare(const zygote::SpareContext& context) {
  // First: Python's own after-fork work (thread state, locks, os.register_at_fork hooks
  // such as random's reseed), before any other Python call.
  interpreter_.api().PyOS_AfterFork_Child();
  // Right away rather than last: a zygote dying while this spare prepares takes it along.
  if (!isolation::DieWithParent(context.zygote_pid).ok()) ::_exit(zygote::kSpareZygoteGone);
  // A request wakes this process; a short slice lets it preempt whatever runs (main.cc).
  (void)base::sys::RawRequestSlice(base::sys::kShortSliceNs);
  spare_id_ = context.spare_id;

  absl::StatusOr<base::UniqueFd> channel = zygote::AnnounceSpare(context);
  if (!channel.ok()) ::_exit(zygote::kSpareNotAnnounced);

  // Isolation before anything else may run.
  PreparedSpare spare{&interpreter_, function_, channel->get(), Isolate(context.spare_id)};
  ServeChildChannel(spare);
}

void PythonSpareRunner::Prefault(int channel, const wire::ReceivedFrame& received) {
  absl::StatusOr<wire::PrefaultMessage> prefault = wire::DecodePrefault(received);
  if (!prefault.ok()) return;  // Only an optimisation: the spare serves without it.
  // A Run waiting (a busy function) goes first: it would wait for pages it mostly takes
  // anyway, and a large set must never hold a request up.
  const auto run_waiting = [channel] {
    pollfd waiting{channel, POLLIN, 0};
    return ::poll(&waiting, 1, 0) > 0;
  };
  const absl::Time start = absl::Now();
  const size_t pages = PopulatePages(prefault->runs, run_waiting);
  if (verbose_) {
    size_t written = 0;
    for (const wire::PageRun& run : prefault->runs) written += run.write ? run.pages : 0;
    std::fprintf(stderr,
                 "zygo-agent-python: spare %llu: prefault took %zu pages (%zu to write) of %zu "
                 "runs in %lld us\n",
                 static_cast<unsigned long long>(spare_id_), pages, written, prefault->runs.size(),
                 static_cast<long long>(absl::ToInt64Microseconds(absl::Now() - start)));
  }
}

void PythonSpareRunner::ServeChildChannel(PreparedSpare& spare) {
  for (;;) {
    absl::StatusOr<wire::ReceivedFrame> received =
        wire::ReceiveFrame(spare.channel, absl::InfiniteDuration());
    if (wire::IsPeerClosed(received.status())) ::_exit(0);  // Retired unused.
    absl::Status status = received.status();
    if (received.ok()) {
      if (received->frame.type == wire::MessageType::kRun) {
        absl::StatusOr<wire::RunMessage> run = wire::DecodeRun(*received);
        if (run.ok()) RunRequest(spare, *received, *run);
        status = run.status();
      } else if (received->frame.type == wire::MessageType::kJoin) {
        // Before Prefault, so the pages it takes are charged to the request's cgroup.
        if (!wire::AnswerJoin(spare.channel, *received).ok() && verbose_) {
          std::fprintf(stderr, "zygo-agent-python: spare %llu could not join its cgroup\n",
                       static_cast<unsigned long long>(spare_id_));
        }
        continue;
      } else if (received->frame.type == wire::MessageType::kPrefault) {
        Prefault(spare.channel, *received);
        continue;
      } else if (received->frame.type == wire::MessageType::kPing) {
        (void)wire::SendFrame(spare.channel,
                              {wire::MessageType::kPong, received->frame.request_id, ""}, {});
        continue;
      } else {
        status = absl::InvalidArgumentError(absl::StrCat(
            "a child channel does not take ", wire::MessageTypeName(received->frame.type)));
      }
    }
    const uint64_t id = received.ok() ? received->frame.request_id : 0;
    absl::StatusOr<wire::Frame> error = wire::Encode(wire::ErrorMessage{
        id, status.code(), std::string(status.message().substr(0, wire::kMaxErrorMessageSize))});
    if (!error.ok() || !wire::SendFrame(spare.channel, *error, {}).ok()) {
      ::_exit(zygote::kSpareChannelBroken);
    }
  }
}

}  // namespace zygo::agents::python
