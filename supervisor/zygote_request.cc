// One request on one spare: send the event with memfds for stdin/stdout/stderr, wait for
// the answer, the deadline or the caller's cancel, then say how it ended.
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "absl/strings/str_cat.h"
#include "agents/wire/channel.h"
#include "agents/wire/event_memfd.h"
#include "agents/wire/messages.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "core/base/sys/fs.h"
#include "core/outcome.h"
#include "supervisor/event_limit.h"
#include "supervisor/zygote.h"
#include "supervisor/zygote_spare.h"

namespace zygo::supervisor {
namespace {

using core::OutcomeStatus;

using Clock = std::chrono::steady_clock;

// Every event the API takes must be one a Run can carry.
static_assert(kMaxEventBytes <= wire::kMaxEventBytes);

int64_t Micros(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration_cast<std::chrono::microseconds>(to - from).count();
}

// Puts the request's stdin into its (empty) memfd, from the start.
absl::Status FillStdin(const base::UniqueFd& fd, const std::string& content) {
  ZYGO_RETURN_IF_ERROR(base::sys::WriteAll(fd, content.data(), content.size(), "request stdin"));
  lseek(fd.get(), 0, SEEK_SET);
  return absl::OkStatus();
}

// Reads at most kMaxCapturedBytes of what the request wrote.
std::string ReadCaptured(int fd, bool* truncated) {
  struct stat st;
  if (fstat(fd, &st) != 0) return "";
  size_t size = static_cast<size_t>(st.st_size);
  *truncated = size > kMaxCapturedBytes;
  std::string out(std::min(size, kMaxCapturedBytes), '\0');
  size_t done = 0;
  while (done < out.size()) {
    ssize_t n = pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  out.resize(done);
  return out;
}

enum class Ending { kDone, kFailed, kChildGone, kTimeout, kCancelled, kProtocolError };

struct Answer {
  Ending ending = Ending::kChildGone;
  std::string compiled;  // a pool script's bytecode, when the child sent Compiled
  wire::DoneMessage done;
  wire::FailedMessage failed;
  std::string protocol_error;
};

// Waits on the spare's channel for Done or Failed until `deadline` or a cancel. A
// Compiled before them is taken only when the Run carried source (`sent_code`).
Answer AwaitAnswer(int channel, const CancelSignal& cancel, Clock::time_point deadline,
                   bool sent_code) {
  Answer answer;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      answer.ending = Ending::kTimeout;
      return answer;
    }
    struct pollfd fds[2] = {{channel, POLLIN, 0}, {cancel.fd(), POLLIN, 0}};
    int n = poll(fds, 2, static_cast<int>(std::min<int64_t>(left.count() + 1, 1000)));
    if (cancel.cancelled()) {
      answer.ending = Ending::kCancelled;
      return answer;
    }
    if (n <= 0) continue;
    absl::StatusOr<wire::ReceivedFrame> frame = wire::ReceiveFrame(channel, absl::ZeroDuration());
    if (!frame.ok()) {
      if (absl::IsDeadlineExceeded(frame.status())) continue;
      answer.ending =
          wire::IsPeerClosed(frame.status()) ? Ending::kChildGone : Ending::kProtocolError;
      answer.protocol_error = std::string(frame.status().message());
      return answer;
    }
    if (frame->frame.type == wire::MessageType::kCompiled && sent_code && answer.compiled.empty()) {
      absl::StatusOr<wire::CompiledMessage> compiled = wire::DecodeCompiled(*frame);
      if (compiled.ok()) {
        answer.compiled = std::move(compiled->bytecode);
        continue;
      }
    } else if (frame->frame.type == wire::MessageType::kDone) {
      absl::StatusOr<wire::DoneMessage> done = wire::DecodeDone(*frame);
      if (done.ok()) {
        answer.ending = Ending::kDone;
        answer.done = *std::move(done);
        return answer;
      }
    } else if (frame->frame.type == wire::MessageType::kFailed) {
      absl::StatusOr<wire::FailedMessage> failed = wire::DecodeFailed(*frame);
      if (failed.ok()) {
        answer.ending = Ending::kFailed;
        answer.failed = *std::move(failed);
        return answer;
      }
    }
    answer.ending = Ending::kProtocolError;
    answer.protocol_error =
        absl::StrCat("unexpected ", wire::MessageTypeName(frame->frame.type), " frame");
    return answer;
  }
}

// Fills the outcome from the child's wait status (if known) and its cgroup's counters,
// except a pids-limit hit (DescribeEnd's).
void DescribeEnding(const Answer& answer, std::optional<int> status, const core::CgroupUsage& usage,
                    ExecReply* reply) {
  RequestOutcome& outcome = reply->outcome;
  outcome.oom_killed = usage.oom_kills > 0;
  outcome.peak_rss_kb = usage.memory_peak_bytes / 1024;
  if (status.has_value() && WIFEXITED(*status)) outcome.exit_code = WEXITSTATUS(*status);
  if (status.has_value() && WIFSIGNALED(*status)) {
    outcome.signal = WTERMSIG(*status);
    outcome.exit_code = 128 + outcome.signal;
  }
  switch (answer.ending) {
    case Ending::kDone:
      reply->ok = outcome.exit_code == 0;
      outcome.status = reply->ok ? OutcomeStatus::kOk : OutcomeStatus::kNonzeroExit;
      reply->result_json = answer.done.result;
      return;
    case Ending::kFailed:
      outcome.status = OutcomeStatus::kHandlerError;
      if (!status.has_value()) outcome.exit_code = 1;
      reply->error_type = answer.failed.error_type;
      reply->error_message = answer.failed.message;
      reply->traceback = answer.failed.traceback;
      return;
    case Ending::kTimeout:
      outcome.status = OutcomeStatus::kTimeout;
      outcome.timed_out = true;
      outcome.exit_code = 137;
      outcome.signal = SIGKILL;
      reply->error_type = "timeout";
      reply->error_message = "the request ran past its deadline and was killed";
      return;
    default:
      break;
  }
  if (outcome.oom_killed) {
    outcome.status = OutcomeStatus::kOom;
    outcome.exit_code = 137;
    reply->error_type = "oom";
    reply->error_message = "the request ran out of memory and was killed";
  } else if (outcome.signal != 0) {
    outcome.status = OutcomeStatus::kSignaled;
    reply->error_type = "crashed";
    reply->error_message = absl::StrCat("the request was killed by signal ", outcome.signal);
  } else if (answer.ending == Ending::kChildGone && status.has_value() && outcome.exit_code == 0) {
    // Warm-exec: the command ran and exited 0.
    outcome.status = OutcomeStatus::kOk;
    reply->ok = true;
  } else {
    outcome.status = OutcomeStatus::kNonzeroExit;
    reply->ok = false;
    reply->error_type = "nonzero_exit";
    reply->error_message =
        answer.protocol_error.empty()
            ? absl::StrCat("the process exited with ", outcome.exit_code, " before answering")
            : answer.protocol_error;
  }
}

// As `zygo run` says it (core/launch.cc), in its order: after the deadline, zygo-init's
// kill for a foreign-ABI call (exit 159), then the OOM killer, then a fork refused by the
// pids limit (pids_limit whatever the request did next: the handler may have caught the
// error and returned).
void DescribeEnd(const Answer& answer, std::optional<int> status, const core::CgroupUsage& usage,
                 const std::optional<core::SeccompKillNotice>& seccomp_kill, ExecReply* reply) {
  DescribeEnding(answer, status, usage, reply);
  RequestOutcome& outcome = reply->outcome;
  if (seccomp_kill.has_value()) {
    outcome.status = OutcomeStatus::kSeccompKilled;
    outcome.signal = SIGSYS;
    outcome.exit_code = 128 + SIGSYS;
    outcome.seccomp_syscall = seccomp_kill->name;
    outcome.seccomp_arch = seccomp_kill->arch;
    reply->error_type = "seccomp";
    reply->error_message =
        absl::StrCat("the request was killed: it called ", seccomp_kill->name, " (",
                     seccomp_kill->arch, "), which the sandbox's seccomp filter refuses");
  } else if (usage.pids_max_hits > 0 && outcome.status != OutcomeStatus::kTimeout &&
             outcome.status != OutcomeStatus::kOom) {
    outcome.status = OutcomeStatus::kPidsLimit;
  }
}

}  // namespace

// After the reply, off the request's time: the child sends Touched once it has scanned its
// pages, after its Done; waited for at most 100 ms.
void Zygote::LearnTouched(Spare& spare) {
  absl::StatusOr<wire::ReceivedFrame> frame =
      wire::ReceiveFrame(spare.channel.get(), absl::Milliseconds(100));
  if (!frame.ok() || frame->frame.type != wire::MessageType::kTouched) return;
  absl::StatusOr<wire::TouchedMessage> touched = wire::DecodeTouched(*frame);
  if (touched.ok()) prefault_.Learn(touched->runs);
}

// The request's stdin into the spare's memfd, then its Run with the stdio fds. The event
// goes in the frame when it fits there (most do, and then it costs nothing more), else in
// a sealed memfd sent after the stdio fds (wire v6). A pool script goes as the bytecode
// cached for it when there is some, else as its source. A Run that cannot be encoded is
// InvalidArgument; a spare that is gone, wire::IsPeerClosed.
absl::Status Zygote::SendRun(Spare& spare, const SpareRequest& request, bool report_touched,
                             bool* sent_code) {
  const int in = spare.stdio[0].get(), out = spare.stdio[1].get(), err = spare.stdio[2].get();
  ZYGO_RETURN_IF_ERROR(FillStdin(spare.stdio[0], request.stdin_data));
  wire::RunMessage run;
  run.request_id = request.request_id;
  run.entry = request.entry;
  run.deadline_ms = static_cast<uint64_t>(std::max<int64_t>(1, request.timeout_ms));
  run.fd_layout = wire::FdLayout::kStdio;
  run.report_touched = report_touched;
  // Inline first; the memfd only when the event cannot share the frame with the rest.
  auto encode = [&]() -> absl::StatusOr<wire::Frame> {
    run.event_fd_size = 0;
    if (request.event.size() <= wire::kMaxPayloadSize) {
      run.event = request.event;
      absl::StatusOr<wire::Frame> frame = wire::Encode(run);
      if (frame.ok() || request.event.empty()) return frame;
    }
    run.event.clear();
    run.event_fd_size = request.event.size();
    return wire::Encode(run);
  };
  absl::StatusOr<wire::Frame> frame = absl::UnknownError("not encoded");
  if (!request.code.empty()) {
    std::optional<std::string> bytecode = bytecode_.Find(request.entry);
    if (bytecode.has_value()) {
      run.bytecode = *std::move(bytecode);
      frame = encode();
    }
  }
  *sent_code = false;
  if (!frame.ok()) {  // No bytecode yet, or it does not fit beside the event: the source.
    run.bytecode.clear();
    run.code = request.code;
    frame = encode();
    *sent_code = !run.code.empty();
  }
  if (!frame.ok()) return frame.status();
  if (run.event_fd_size == 0) return wire::SendFrame(spare.channel.get(), *frame, {in, out, err});
  absl::StatusOr<base::UniqueFd> event = wire::MakeEventMemfd(request.event);
  if (!event.ok()) return event.status();
  return wire::SendFrame(spare.channel.get(), *frame, {in, out, err, event->get()});
}

void Zygote::Run(const SpareRequest& request, const CancelSignal& cancel,
                 const std::function<void(ExecReply)>& deliver) {
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::milliseconds(request.timeout_ms);
  ExecReply reply;
  const bool report_touched = config_.learn_prefault && prefault_.WantsReport();
  std::unique_ptr<Spare> spare;
  bool sent_code = false;
  auto sent_at = start;
  // A spare can die between being taken and getting its Run (its zygote was killed, say).
  // Nothing of the request reached it then, so it goes to the next spare; one whose zygote
  // is gone makes TakeSpare say so.
  for (int attempt = 1;; ++attempt) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    absl::StatusOr<std::unique_ptr<Spare>> taken =
        TakeSpare(std::max<int64_t>(0, left.count()), cancel);
    if (!taken.ok()) {
      reply.status = taken.status();
      reply.timings.total_us = Micros(start, Clock::now());
      deliver(std::move(reply));
      return;
    }
    spare = *std::move(taken);
    // A spare that did not answer its Join sanely is treated as one that died.
    absl::Status joined = spare->joining ? FinishJoin(*spare, deadline) : absl::OkStatus();
    absl::Status sent = joined.ok() ? SendRun(*spare, request, report_touched, &sent_code)
                                    : absl::UnavailableError(joined.message());
    sent_at = Clock::now();
    if (sent.ok()) break;
    DestroySpare(std::move(spare));
    TopUpSpares();
    if ((!joined.ok() || wire::IsPeerClosed(sent)) && attempt < kSendAttempts) continue;
    reply.status =
        !joined.ok() || wire::IsPeerClosed(sent)
            ? absl::UnavailableError("the spares died before the request reached one")
            : absl::InvalidArgumentError(absl::StrCat("cannot send the request: ", sent.message()));
    reply.timings.total_us = Micros(start, Clock::now());
    deliver(std::move(reply));
    return;
  }
  reply.timings.fork_us = spare->fork_us;
  reply.timings.admit_us = spare->admit_us;
  const int out = spare->stdio[1].get(), err = spare->stdio[2].get();

  Answer answer = AwaitAnswer(spare->channel.get(), cancel, deadline, sent_code);
  if (!answer.compiled.empty()) bytecode_.Add(request.entry, std::move(answer.compiled));
  auto answered_at = Clock::now();
  if (answer.ending == Ending::kTimeout || answer.ending == Ending::kCancelled ||
      answer.ending == Ending::kProtocolError) {
    KillSpare(*spare);
  }
  // A reply means the child is about to exit 0 or 1 by itself; waiting for its status
  // would only add the zygote's reaping to the request's time.
  // No answer: the process ended, or (warm-exec) exec'd the command, which closed the
  // channel; either way its exit status is the answer, due by the deadline.
  std::optional<int> status;
  if (answer.ending == Ending::kChildGone && !dead_.load()) {
    auto left = deadline - Clock::now();
    status = WaitExitStatus(spare->id, absl::FromChrono(std::max(left, Clock::duration::zero())));
    if (!status.has_value() && !dead_.load()) {
      answer.ending = Ending::kTimeout;
      KillSpare(*spare);
    }
  }
  // Failed is an error path: its exit status (127 for a command not found) is worth the
  // zygote's reaping time. Done (the hot path) does not wait.
  if (answer.ending != Ending::kDone && !status.has_value()) {
    status = WaitExitStatus(spare->id, absl::Seconds(2));
  }
  if (answer.ending == Ending::kChildGone) answered_at = Clock::now();
  // A reply (the hot path) needs only the memory peak and whether a fork was refused now;
  // whether the cgroup can be used again is asked once it is empty (DestroySpare).
  core::CgroupUsage usage;
  if (spare->cgroup && answer.ending == Ending::kDone) {
    absl::StatusOr<int64_t> peak = spare->cgroup->ReadMemoryPeak();
    if (peak.ok()) usage.memory_peak_bytes = *peak;
    absl::StatusOr<int64_t> pids_hits = spare->cgroup->ReadPidsMaxHits();
    if (pids_hits.ok()) usage.pids_max_hits = *pids_hits;
  } else if (spare->cgroup) {
    absl::StatusOr<core::CgroupUsage> read = spare->cgroup->ReadUsage();
    if (read.ok()) usage = *read;
  }
  if (answer.ending == Ending::kCancelled) {
    reply.status = absl::CancelledError("the caller went away; the request was killed");
  } else if (answer.ending == Ending::kChildGone && dead_.load()) {
    std::lock_guard<std::mutex> lock(mu_);
    reply.status = absl::UnavailableError(absl::StrCat("the zygote of ", config_.name,
                                                       " died during the request (", death_reason_,
                                                       "); it is re-warmed on the next request"));
  }
  // A SIGKILL that is not the deadline's, a cancel's, the OOM killer's or a dying zygote's
  // may be zygo-init's, for a call from a foreign ABI. Its report comes over the init's
  // pipe and the exit over the agent's channel: it is waited for a little.
  std::optional<core::SeccompKillNotice> seccomp_kill;
  if (answer.ending == Ending::kChildGone && status.has_value() && WIFSIGNALED(*status) &&
      WTERMSIG(*status) == SIGKILL && usage.oom_kills == 0 && !dead_.load()) {
    seccomp_kill = TakeSeccompKill(spare->sandbox_pid, absl::Milliseconds(200));
  }
  DescribeEnd(answer, status, usage, seccomp_kill, &reply);
  reply.outcome.limits_applied = spare->cgroup != nullptr;
  const bool clean_end = answer.ending == Ending::kDone || answer.ending == Ending::kFailed;
  reply.stdout_data = ReadCaptured(out, &reply.stdout_truncated);
  reply.stderr_data = ReadCaptured(err, &reply.stderr_truncated);
  const auto now = Clock::now();
  reply.outcome.wall_ms = static_cast<double>(Micros(sent_at, answered_at)) / 1000.0;
  reply.timings.run_us = Micros(sent_at, answered_at);
  reply.timings.reply_us = Micros(answered_at, now);
  reply.timings.total_us = Micros(start, now);
  deliver(std::move(reply));

  if (report_touched && answer.ending == Ending::kDone) LearnTouched(*spare);
  spare->cgroup_reusable = clean_end;
  // After the reply: the child exits by itself; its cgroup goes once the zygote has
  // reaped it (see RetireSpare), without this thread waiting for that.
  if (status.has_value()) {
    DestroySpare(std::move(spare));
    TopUpSpares();  // the replacement TakeSpare may have left for later
  } else {
    RetireSpare(std::move(spare));  // tops up once the zygote reaped the child
  }
  TrimSpares();
}

}  // namespace zygo::supervisor
