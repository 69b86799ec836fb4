// One request on one spare: finish the spare's join, send the event with memfds for
// stdin/stdout/stderr, wait for the answer, the deadline or the caller's cancel, then say
// how it ended and retire the spare.
#include "supervisor/request_run.h"

#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "agents/wire/channel.h"
#include "agents/wire/event_memfd.h"
#include "agents/wire/messages.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "core/base/sys/fs.h"
#include "core/outcome.h"
#include "supervisor/event_limit.h"
#include "supervisor/log.h"

namespace zygo::supervisor {
namespace {

using core::OutcomeStatus;

using Clock = std::chrono::steady_clock;

// Every event the API takes must be one a Run can carry.
static_assert(kMaxEventBytes <= wire::kMaxEventBytes);

// A spare answers Join once its isolation is set up, well under a millisecond after its
// fork; a request that takes it sooner waits for that anyway.
constexpr auto kJoinAnswerWait = std::chrono::seconds(1);

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

}  // namespace

enum class RequestRun::Ending { kDone, kFailed, kChildGone, kTimeout, kCancelled, kProtocolError };

struct RequestRun::Answer {
  Ending ending = Ending::kChildGone;
  std::string compiled;  // a pool script's bytecode, when the child sent Compiled
  wire::DoneMessage done;
  wire::FailedMessage failed;
  std::string protocol_error;
};

RequestRun::RequestRun(Zygote& zygote, const SpareRequest& request, const CancelSignal& cancel)
    : zygote_(zygote),
      request_(request),
      cancel_(cancel),
      start_(Clock::now()),
      deadline_(start_ + std::chrono::milliseconds(request.timeout_ms)),
      report_touched_(zygote.config_.learn_prefault && zygote.prefault_.WantsReport()),
      sent_at_(start_) {}

void RequestRun::Run(const std::function<void(ExecReply)>& deliver) {
  if (absl::Status sent = Send(); !sent.ok()) {
    reply_.status = std::move(sent);
    reply_.timings.total_us = Micros(start_, Clock::now());
    deliver(std::move(reply_));
    return;
  }
  reply_.timings.fork_us = spare_->fork_us;
  reply_.timings.admit_us = spare_->admit_us;
  Answer answer = AwaitAnswer();
  if (!answer.compiled.empty()) zygote_.bytecode_.Add(request_.entry, std::move(answer.compiled));
  answered_at_ = Clock::now();
  std::optional<int> status = AwaitExit(answer);
  Describe(answer, status);
  deliver(std::move(reply_));
  Retire(answer.ending, status.has_value());
}

// A spare can die between being taken and getting its Run (its zygote was killed, say).
// Nothing of the request reached it then, so it goes to the next spare; one whose zygote
// is gone makes the pool's Take say so.
absl::Status RequestRun::Send() {
  for (int attempt = 1;; ++attempt) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now());
    absl::StatusOr<std::unique_ptr<Spare>> taken =
        zygote_.pool_.Take(std::max<int64_t>(0, left.count()), cancel_);
    if (!taken.ok()) return taken.status();
    spare_ = *std::move(taken);
    // A spare that did not answer its Join sanely is treated as one that died.
    absl::Status joined = spare_->joining ? FinishJoin() : absl::OkStatus();
    absl::Status sent = joined.ok() ? SendRun() : absl::UnavailableError(joined.message());
    sent_at_ = Clock::now();
    if (sent.ok()) return absl::OkStatus();
    zygote_.DestroySpare(std::move(spare_));
    zygote_.pool_.TopUp();
    if (joined.ok() && !wire::IsPeerClosed(sent)) {
      return absl::InvalidArgumentError(absl::StrCat("cannot send the request: ", sent.message()));
    }
    if (attempt == Zygote::kSendAttempts) {
      return absl::UnavailableError("the spares died before the request reached one");
    }
  }
}

// The spare's answer to Join, read by the request's thread before the Run goes out (it is
// normally waiting already). Error: this host will not let a spare write there, so it and
// every later spare are moved by the supervisor. A spare that answers nothing sane is gone.
absl::Status RequestRun::FinishJoin() {
  spare_->joining = false;
  const auto wait = std::min<Clock::duration>(kJoinAnswerWait, deadline_ - Clock::now());
  absl::StatusOr<wire::ReceivedFrame> answer = wire::ReceiveFrame(
      spare_->channel.get(), absl::FromChrono(std::max(wait, Clock::duration::zero())));
  if (!answer.ok()) return answer.status();
  if (wire::DecodeJoined(*answer).ok()) return absl::OkStatus();
  absl::StatusOr<wire::ErrorMessage> error = wire::DecodeError(*answer);
  if (!error.ok()) {
    return absl::InternalError("the spare answered Join with neither Joined nor Error");
  }
  if (!zygote_.join_refused_.exchange(true)) {
    LogFor(zygote_.config_.name, LogLevel::kWarning,
           absl::StrCat("a spare did not join its cgroup by itself (", error->message,
                        "); the supervisor moves spares from now on"));
  }
  return spare_->cgroup ? spare_->cgroup->AttachFromParent(spare_->pid) : absl::OkStatus();
}

// The request's stdin into the spare's memfd, then its Run with the stdio fds. The event
// goes in the frame when it fits there (most do, and then it costs nothing more), else in
// a sealed memfd sent after the stdio fds (wire v6). A pool script goes as the bytecode
// cached for it when there is some, else as its source. A Run that cannot be encoded is
// InvalidArgument; a spare that is gone, wire::IsPeerClosed.
absl::Status RequestRun::SendRun() {
  const int in = spare_->stdio[0].get(), out = spare_->stdio[1].get(), err = spare_->stdio[2].get();
  ZYGO_RETURN_IF_ERROR(FillStdin(spare_->stdio[0], request_.stdin_data));
  wire::RunMessage run;
  run.request_id = request_.request_id;
  run.entry = request_.entry;
  run.deadline_ms = static_cast<uint64_t>(std::max<int64_t>(1, request_.timeout_ms));
  run.fd_layout = wire::FdLayout::kStdio;
  run.report_touched = report_touched_;
  // Inline first; the memfd only when the event cannot share the frame with the rest.
  auto encode = [&]() -> absl::StatusOr<wire::Frame> {
    run.event_fd_size = 0;
    if (request_.event.size() <= wire::kMaxPayloadSize) {
      run.event = request_.event;
      absl::StatusOr<wire::Frame> frame = wire::Encode(run);
      if (frame.ok() || request_.event.empty()) return frame;
    }
    run.event.clear();
    run.event_fd_size = request_.event.size();
    return wire::Encode(run);
  };
  absl::StatusOr<wire::Frame> frame = absl::UnknownError("not encoded");
  if (!request_.code.empty()) {
    std::optional<std::string> bytecode = zygote_.bytecode_.Find(request_.entry);
    if (bytecode.has_value()) {
      run.bytecode = *std::move(bytecode);
      frame = encode();
    }
  }
  sent_code_ = false;
  if (!frame.ok()) {  // No bytecode yet, or it does not fit beside the event: the source.
    run.bytecode.clear();
    run.code = request_.code;
    frame = encode();
    sent_code_ = !run.code.empty();
  }
  if (!frame.ok()) return frame.status();
  if (run.event_fd_size == 0) return wire::SendFrame(spare_->channel.get(), *frame, {in, out, err});
  absl::StatusOr<base::UniqueFd> event = wire::MakeEventMemfd(request_.event);
  if (!event.ok()) return event.status();
  return wire::SendFrame(spare_->channel.get(), *frame, {in, out, err, event->get()});
}

// Waits on the spare's channel for Done or Failed until the deadline or a cancel. A
// Compiled before them is taken only when the Run carried source (sent_code_).
RequestRun::Answer RequestRun::AwaitAnswer() const {
  const int channel = spare_->channel.get();
  Answer answer;
  // A Done or Failed that decodes ends the wait; one that does not is a protocol error.
  auto ends = [&answer](auto decoded, Ending ending, auto* message) {
    if (!decoded.ok()) return false;
    answer.ending = ending;
    *message = *std::move(decoded);
    return true;
  };
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now());
    if (left.count() <= 0) {
      answer.ending = Ending::kTimeout;
      return answer;
    }
    struct pollfd fds[2] = {{channel, POLLIN, 0}, {cancel_.fd(), POLLIN, 0}};
    int n = poll(fds, 2, static_cast<int>(std::min<int64_t>(left.count() + 1, 1000)));
    if (cancel_.cancelled()) {
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
    if (frame->frame.type == wire::MessageType::kCompiled && sent_code_ &&
        answer.compiled.empty()) {
      absl::StatusOr<wire::CompiledMessage> compiled = wire::DecodeCompiled(*frame);
      if (compiled.ok()) {
        answer.compiled = std::move(compiled->bytecode);
        continue;
      }
    } else if (frame->frame.type == wire::MessageType::kDone) {
      if (ends(wire::DecodeDone(*frame), Ending::kDone, &answer.done)) return answer;
    } else if (frame->frame.type == wire::MessageType::kFailed) {
      if (ends(wire::DecodeFailed(*frame), Ending::kFailed, &answer.failed)) return answer;
    }
    answer.ending = Ending::kProtocolError;
    answer.protocol_error =
        absl::StrCat("unexpected ", wire::MessageTypeName(frame->frame.type), " frame");
    return answer;
  }
}

// The child's wait status, when it is worth waiting for; kills a spare that gave no answer
// in time.
std::optional<int> RequestRun::AwaitExit(Answer& answer) {
  if (answer.ending == Ending::kTimeout || answer.ending == Ending::kCancelled ||
      answer.ending == Ending::kProtocolError) {
    zygote_.KillSpare(*spare_);
  }
  // A reply means the child is about to exit 0 or 1 by itself; waiting for its status
  // would only add the zygote's reaping to the request's time.
  // No answer: the process ended, or (warm-exec) exec'd the command, which closed the
  // channel; either way its exit status is the answer, due by the deadline.
  std::optional<int> status;
  if (answer.ending == Ending::kChildGone && zygote_.alive()) {
    auto left = deadline_ - Clock::now();
    status = zygote_.WaitExitStatus(spare_->id,
                                    absl::FromChrono(std::max(left, Clock::duration::zero())));
    if (!status.has_value() && zygote_.alive()) {
      answer.ending = Ending::kTimeout;
      zygote_.KillSpare(*spare_);
    }
  }
  // Failed is an error path: its exit status (127 for a command not found) is worth the
  // zygote's reaping time. Done (the hot path) does not wait.
  if (answer.ending != Ending::kDone && !status.has_value()) {
    status = zygote_.WaitExitStatus(spare_->id, absl::Seconds(2));
  }
  if (answer.ending == Ending::kChildGone) answered_at_ = Clock::now();
  return status;
}

// A reply (the hot path) needs only the memory peak and whether a fork was refused now;
// whether the cgroup can be used again is asked once it is empty (Zygote::DestroySpare).
core::CgroupUsage RequestRun::ReadUsage(const Answer& answer) const {
  core::CgroupUsage usage;
  if (spare_->cgroup && answer.ending == Ending::kDone) {
    absl::StatusOr<int64_t> peak = spare_->cgroup->ReadMemoryPeak();
    if (peak.ok()) usage.memory_peak_bytes = *peak;
    absl::StatusOr<int64_t> pids_hits = spare_->cgroup->ReadPidsMaxHits();
    if (pids_hits.ok()) usage.pids_max_hits = *pids_hits;
  } else if (spare_->cgroup) {
    absl::StatusOr<core::CgroupUsage> read = spare_->cgroup->ReadUsage();
    if (read.ok()) usage = *read;
  }
  return usage;
}

// The reply: the outcome, what the request wrote, and the timings.
void RequestRun::Describe(const Answer& answer, std::optional<int> status) {
  const core::CgroupUsage usage = ReadUsage(answer);
  if (answer.ending == Ending::kCancelled) {
    reply_.status = absl::CancelledError("the caller went away; the request was killed");
  } else if (answer.ending == Ending::kChildGone && !zygote_.alive()) {
    reply_.status = absl::UnavailableError(
        absl::StrCat("the zygote of ", zygote_.config_.name, " died during the request (",
                     zygote_.pool_.close_reason(), "); it is re-warmed on the next request"));
  }
  // A SIGKILL that is not the deadline's, a cancel's, the OOM killer's or a dying zygote's
  // may be zygo-init's, for a call from a foreign ABI. Its report comes over the init's
  // pipe and the exit over the agent's channel: it is waited for a little.
  std::optional<core::SeccompKillNotice> seccomp_kill;
  if (answer.ending == Ending::kChildGone && status.has_value() && WIFSIGNALED(*status) &&
      WTERMSIG(*status) == SIGKILL && usage.oom_kills == 0 && zygote_.alive()) {
    seccomp_kill = zygote_.TakeSeccompKill(spare_->sandbox_pid, absl::Milliseconds(200));
  }
  DescribeEnd(answer, status, usage, seccomp_kill, &reply_);
  reply_.outcome.limits_applied = spare_->cgroup != nullptr;
  reply_.stdout_data = ReadCaptured(spare_->stdio[1].get(), &reply_.stdout_truncated);
  reply_.stderr_data = ReadCaptured(spare_->stdio[2].get(), &reply_.stderr_truncated);
  const auto now = Clock::now();
  reply_.outcome.wall_ms = static_cast<double>(Micros(sent_at_, answered_at_)) / 1000.0;
  reply_.timings.run_us = Micros(sent_at_, answered_at_);
  reply_.timings.reply_us = Micros(answered_at_, now);
  reply_.timings.total_us = Micros(start_, now);
}

// Fills the outcome from the child's wait status (if known) and its cgroup's counters,
// except a pids-limit hit (DescribeEnd's).
void RequestRun::DescribeEnding(const Answer& answer, std::optional<int> status,
                                const core::CgroupUsage& usage, ExecReply* reply) {
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
void RequestRun::DescribeEnd(const Answer& answer, std::optional<int> status,
                             const core::CgroupUsage& usage,
                             const std::optional<core::SeccompKillNotice>& seccomp_kill,
                             ExecReply* reply) {
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

// After the reply, off the request's time: the child sends Touched once it has scanned its
// pages, after its Done; waited for at most 100 ms.
void RequestRun::LearnTouched() {
  absl::StatusOr<wire::ReceivedFrame> frame =
      wire::ReceiveFrame(spare_->channel.get(), absl::Milliseconds(100));
  if (!frame.ok() || frame->frame.type != wire::MessageType::kTouched) return;
  absl::StatusOr<wire::TouchedMessage> touched = wire::DecodeTouched(*frame);
  if (touched.ok()) zygote_.prefault_.Learn(touched->runs);
}

// After the reply: the child exits by itself; its cgroup goes once the zygote has reaped
// it (see Zygote::RetireSpare), without this thread waiting for that. `reaped`: its exit
// status is known already.
void RequestRun::Retire(Ending ending, bool reaped) {
  if (report_touched_ && ending == Ending::kDone) LearnTouched();
  // The request ended by itself (an answer, not a kill).
  spare_->cgroup_reusable = ending == Ending::kDone || ending == Ending::kFailed;
  if (reaped) {
    zygote_.DestroySpare(std::move(spare_));
    zygote_.pool_.TopUp();  // the replacement the pool's Take may have left for later
  } else {
    zygote_.RetireSpare(std::move(spare_));  // tops up once the zygote reaped the child
  }
  zygote_.TrimSpares();
}

}  // namespace zygo::supervisor
