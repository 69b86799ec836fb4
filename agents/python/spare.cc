// The spare's start-up, isolation, prefault and wait for Run.
#include "agents/python/spare.h"

#include <errno.h>
#include <poll.h>
#include <unistd.h>

#include <cstdio>

#include "agents/isolation/isolation.h"
#include "agents/python/prefault.h"
#include "agents/wire/messages.h"
#include "core/base/sys/sched_attr.h"

namespace zygo::agents::python {

// No flush of sys.stdout/stderr here: they are unbuffered (Interpreter::Start), and the
// zygote flushed them after the handler's import, the last Python code of its own to run.
void PythonSpareRunner::BeforeFork() { interpreter_.api().PyOS_BeforeFork(); }

void PythonSpareRunner::AfterForkInParent() { interpreter_.api().PyOS_AfterFork_Parent(); }

absl::Status PythonSpareRunner::Isolate() {
  if (absl::Status isolated = isolation::IsolateSpare(landlock_); !isolated.ok()) {
    return isolated;
  }
  // The zygote's tempfile may have cached a TMPDIR of the function's env, outside this
  // request's own /tmp.
  if (absl::Status status = interpreter_.PointTempDirAt(isolation::kRequestTmp); !status.ok()) {
    return status;
  }
  if (verbose_) {  // IsolateSpare succeeded: landlock_ is OK, and its ABI is the one applied.
    std::fprintf(stderr, "zygo-agent-python: spare %llu: landlock abi %d\n",
                 static_cast<unsigned long long>(spare_id_), landlock_->abi);
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
  // Before Forked: the supervisor mounts this spare's /tmp in the namespaces it names then.
  const absl::Status setup = isolation::EnterOwnNamespaces();

  absl::StatusOr<base::UniqueFd> channel = zygote::AnnounceSpare(context);
  if (!channel.ok()) ::_exit(zygote::kSpareNotAnnounced);

  // Isolation at the supervisor's Isolate, before any Run.
  const PreparedSpare spare{&interpreter_, function_, channel->get()};
  zygote::ChildChannelHandlers handlers;
  handlers.on_run = [&spare](wire::ReceivedFrame& received, const wire::RunMessage& run) {
    RunRequest(spare, received, run);
  };
  handlers.on_isolate = [this] { return Isolate(); };
  // The supervisor sends Join before Prefault, so the pages it takes are charged to the
  // request's cgroup.
  handlers.on_other = [this, &spare](const wire::ReceivedFrame& received) {
    if (received.frame.type != wire::MessageType::kPrefault) return false;
    Prefault(spare.channel, received);
    return true;
  };
  if (verbose_) {
    handlers.on_join_failed = [this](const absl::Status&) {
      std::fprintf(stderr, "zygo-agent-python: spare %llu could not join its cgroup\n",
                   static_cast<unsigned long long>(spare_id_));
    };
  }
  zygote::ServeChildChannel(spare.channel, setup, handlers);
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

}  // namespace zygo::agents::python
