// The spare's start-up, isolation, idle prefault and wait for Run.
#include "agents/python/spare.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "agents/python/isolation.h"
#include "agents/wire/channel.h"
#include "agents/wire/messages.h"

namespace zygo::agents::python {
namespace {

// Exit statuses of a spare that could not even start; the zygote reports them in Done.
enum SpareExit : int {
  kZygoteGone = 3,
  kNoChannel = 4,
  kForkedNotSent = 5,
  kChildChannelBroken = 6,
};

// Pages per prefault slice: ~0.2 ms of work, so a Run waits at most that long for it.
constexpr size_t kPrefaultSlice = 64;
// How long a spare must go without a Run before it prefaults. In a burst, spares are
// taken within milliseconds and the CPU the prefault would burn belongs to the requests;
// a spare idle this long is likely to stay idle long enough to finish (~5 ms).
constexpr absl::Duration kPrefaultAfterIdle = absl::Milliseconds(20);

// Whether `fd` becomes readable within `timeout` (zero: just checks).
bool Readable(int fd, absl::Duration timeout = absl::ZeroDuration()) {
  pollfd pfd{fd, POLLIN, 0};
  // Rounded up, and never negative (poll's "forever").
  const int timeout_ms = static_cast<int>(
      std::max<int64_t>(0, absl::ToInt64Milliseconds(timeout + absl::Microseconds(999))));
  int ready;
  while ((ready = ::poll(&pfd, 1, timeout_ms)) < 0 && errno == EINTR) {
  }
  return ready > 0;
}

}  // namespace

void PythonSpareRunner::BeforeFork() {
  // Buffered output would otherwise be inherited and written again by every child.
  interpreter_.FlushStdio();
  interpreter_.api().PyOS_BeforeFork();
}

void PythonSpareRunner::AfterForkInParent() { interpreter_.api().PyOS_AfterFork_Parent(); }

absl::Status PythonSpareRunner::Isolate(uint64_t spare_id) {
  const std::string tmp_dir = RequestTmpDir(spare_id);
  if (absl::Status status = MakeRequestTmpDir(tmp_dir); !status.ok()) return status;
  if (absl::Status status = interpreter_.PointTempDirAt(tmp_dir); !status.ok()) return status;
  absl::StatusOr<int> abi = RestrictToRequest(tmp_dir);
  if (!abi.ok()) return abi.status();
  if (verbose_) {
    std::fprintf(stderr, "zygo-agent-python: spare %llu: landlock abi %d\n",
                 static_cast<unsigned long long>(spare_id), *abi);
  }
  return absl::OkStatus();
}

void PythonSpareRunner::RunSpare(const SpareContext& context) {
  // First: Python's own after-fork work (thread state, locks, os.register_at_fork hooks
  // such as random's reseed), before any other Python call.
  interpreter_.api().PyOS_AfterFork_Child();
  // Right away rather than last: a zygote dying while this spare prepares takes it along.
  if (!DieWithParent(context.zygote_pid).ok()) ::_exit(kZygoteGone);
  spare_id_ = context.spare_id;

  auto channel = wire::MakeAgentSocketPair();
  if (!channel.ok()) ::_exit(kNoChannel);
  const int handed = channel->second.get();
  absl::StatusOr<wire::Frame> forked =
      wire::Encode(wire::ForkedMessage{context.spare_id, ::getpid()});
  if (!forked.ok() || !wire::SendFrame(context.zygote_channel, *forked, {&handed, 1}).ok()) {
    ::_exit(kForkedNotSent);
  }
  // Only the zygote talks on the zygote channel from now on; the supervisor alone holds
  // the other end of the child channel.
  ::close(context.zygote_channel);
  channel->second.Reset();

  // Isolation before anything else may run; the prefault only saves time, so it waits
  // for the spare to be idle (ServeChildChannel).
  PreparedSpare spare{&interpreter_, function_, channel->first.get(), Isolate(context.spare_id)};
  ServeChildChannel(spare);
}

void PythonSpareRunner::PrefaultWhileIdle(int channel, absl::Time idle_from) {
  // Off unless ZYGO_AGENT_PREFAULT=1: measured on these VMs (docs/agents.md), a prefaulted
  // spare answered an idle request slower (p50 1.37-1.51 ms against 0.95-0.97 ms without,
  // the 16-import handler, requests 100 ms apart), and under load it rarely gets to run.
  static const bool disabled = [] {
    const char* value = ::getenv("ZYGO_AGENT_PREFAULT");
    return value == nullptr || value[0] != '1';
  }();
  if (disabled) prefault_over_ = true;
  if (prefault_over_) return;
  if (!prefault_.has_value()) {
    if (Readable(channel, idle_from + kPrefaultAfterIdle - absl::Now())) return;
    absl::StatusOr<Prefaulter> started = Prefaulter::Start();
    if (!started.ok()) {
      prefault_over_ = true;  // Only an optimisation: the spare serves without it.
      return;
    }
    prefault_.emplace(std::move(*started));
  }
  while (!prefault_->stats().done && !Readable(channel)) {
    if (!prefault_->Step(kPrefaultSlice).ok()) break;
  }
  if (prefault_->stats().done) EndPrefault();
}

void PythonSpareRunner::EndPrefault() {
  if (prefault_over_) return;
  prefault_over_ = true;
  if (verbose_ && prefault_.has_value()) {
    const PrefaultStats& stats = prefault_->stats();
    std::fprintf(stderr,
                 "zygo-agent-python: spare %llu: prefault %s: touched %zu of %zu present pages "
                 "in %zu mappings in %lld us\n",
                 static_cast<unsigned long long>(spare_id_), stats.done ? "done" : "interrupted",
                 stats.pages_touched, stats.pages_present, stats.mappings,
                 static_cast<long long>(absl::ToInt64Microseconds(stats.elapsed)));
  }
  prefault_.reset();  // Closes /proc/self/pagemap: the request gets no fd of ours.
}

void PythonSpareRunner::ServeChildChannel(PreparedSpare& spare) {
  const absl::Time idle_from = absl::Now();
  for (;;) {
    PrefaultWhileIdle(spare.channel, idle_from);
    absl::StatusOr<wire::ReceivedFrame> received =
        wire::ReceiveFrame(spare.channel, absl::InfiniteDuration());
    if (wire::IsPeerClosed(received.status())) ::_exit(0);  // Retired unused.
    absl::Status status = received.status();
    if (received.ok()) {
      if (received->frame.type == wire::MessageType::kRun) {
        absl::StatusOr<wire::RunMessage> run = wire::DecodeRun(*received);
        EndPrefault();
        if (run.ok()) RunRequest(spare, *received, *run);
        status = run.status();
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
      ::_exit(kChildChannelBroken);
    }
  }
}

}  // namespace zygo::agents::python
