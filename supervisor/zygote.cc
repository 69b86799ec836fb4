// The zygote's lifecycle (launch, Hello, death), its channel's reader and its spares'
// admission (Spawn -> Forked -> admit -> the pool). The pool is spare_pool.cc, a request's
// run request_run.cc.
#include "supervisor/zygote.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <deque>
#include <utility>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "agents/wire/channel.h"
#include "agents/wire/messages.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "core/base/sys/fs.h"
#include "core/base/sys/process.h"
#include "core/launch.h"
#include "supervisor/log.h"
#include "supervisor/request_run.h"

namespace zygo::supervisor {
namespace {

constexpr size_t kMaxKeptStatuses = 1024;

int64_t MicrosSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() -
                                                               start)
      .count();
}

}  // namespace

Zygote::Zygote(ZygoteConfig config) : config_(std::move(config)) {}

Zygote::~Zygote() {
  Stop();
  // Requests still in flight at Stop() held their own cgroups inside ours; they are gone
  // now (they held a reference to this zygote), so the function's cgroup can go too.
  request_cgroups_.DestroyFree();
  // The last try: what stays now stays until the next supervisor's sweep, so say so.
  for (core::Cgroup* cgroup : {zygote_cgroup_.get(), cgroup_.get()}) {
    if (cgroup == nullptr) continue;
    if (absl::Status gone = cgroup->Destroy(); !gone.ok()) {
      LogFor(config_.name, LogLevel::kWarning,
             absl::StrCat("its cgroup was left behind: ", gone.message()));
    }
  }
}

absl::StatusOr<std::unique_ptr<Zygote>> Zygote::Start(ZygoteConfig config) {
  std::unique_ptr<Zygote> zygote(new Zygote(std::move(config)));
  auto start = std::chrono::steady_clock::now();
  absl::Status launched = zygote->Launch();
  if (!launched.ok()) {
    zygote->Stop();
    return launched;
  }
  std::unique_lock<std::mutex> lock(zygote->mu_);
  bool warm =
      zygote->hello_cv_.wait_for(lock, absl::ToChronoMilliseconds(zygote->config_.warm_timeout),
                                 [&] { return zygote->hello_ || zygote->dead_.load(); });
  if (!zygote->hello_) {
    lock.unlock();
    zygote->Stop();
    // After Stop the launch thread has said how the sandbox ended.
    std::string why = warm ? zygote->pool_.close_reason() : "it did not become warm in time";
    std::string tail = zygote->LogTail();
    return absl::FailedPreconditionError(
        absl::StrCat("function ", zygote->config_.name, " could not be warmed: ", why,
                     tail.empty() ? "" : "; the agent printed:\n", tail));
  }
  zygote->warm_time_ = absl::FromChrono(std::chrono::steady_clock::now() - start);
  lock.unlock();
  zygote->pool_.TopUp();
  return zygote;
}

absl::Status Zygote::Launch() {
  if (config_.cgroups != nullptr) {
    absl::StatusOr<std::unique_ptr<core::Cgroup>> made =
        config_.cgroups->Create(config_.sandbox.plan.cgroup_limits);
    if (made.ok()) {
      cgroup_ = *std::move(made);
      request_cgroups_.SetParent(cgroup_.get());
      // The sandbox lives in a leaf, the requests in its siblings: cgroup v2 enables no
      // controller below a cgroup that holds processes itself (v1 would not mind).
      ZYGO_ASSIGN_OR_RETURN(zygote_cgroup_, cgroup_->CreateChild({}, "zygote-"));
    } else if (!config_.sandbox.plan.spec.loosening.unlimited()) {
      return made.status();
    }
  }
  if (config_.runtime) {
    ZYGO_ASSIGN_OR_RETURN(
        process_, ForkedZygoteProcess::Start(config_.runtime, config_.forked, zygote_cgroup_.get(),
                                             config_.name, config_.warm_timeout));
  } else {
    ZYGO_ASSIGN_OR_RETURN(process_, AgentSandbox::Launch({config_.sandbox, config_.cgroups,
                                                          zygote_cgroup_.get(), config_.name},
                                                         [this](const std::string& why) {
                                                           MarkDead(why);
                                                           // The sandbox's own account is better
                                                           // than the reader's "channel closed".
                                                           pool_.Explain(why);
                                                         }));
  }
  reader_thread_ = std::thread(&Zygote::ReaderLoop, this);
  return absl::OkStatus();
}

std::string Zygote::LogTail() const { return process_ ? process_->LogTail() : ""; }

void Zygote::ReaderLoop() {
  for (;;) {
    absl::StatusOr<wire::ReceivedFrame> received =
        wire::ReceiveFrame(process_->channel(), absl::InfiniteDuration());
    if (!received.ok()) {
      if (wire::IsPeerClosed(received.status()) || stopping_.load()) {
        MarkDead("the agent closed its channel");
        return;
      }
      // A malformed frame from the agent: the zygote runs untrusted imports, so this is
      // treated as a broken zygote, not a supervisor problem.
      MarkDead(absl::StrCat("the agent sent a bad frame: ", received.status().message()));
      process_->Kill();
      return;
    }
    switch (received->frame.type) {
      case wire::MessageType::kHello: {
        absl::StatusOr<wire::HelloMessage> hello = wire::DecodeHello(*received);
        std::lock_guard<std::mutex> lock(mu_);
        if (hello.ok()) {
          hello_ = true;
          agent_pid_ = static_cast<pid_t>(received->sender_pid);
        }
        hello_cv_.notify_all();
        break;
      }
      case wire::MessageType::kForked:
        HandleForked(*received);
        break;
      case wire::MessageType::kDone:
        HandleDone(*received);
        break;
      case wire::MessageType::kError: {
        absl::StatusOr<wire::ErrorMessage> error = wire::DecodeError(*received);
        if (error.ok()) {
          LogFor(config_.name, LogLevel::kError, absl::StrCat("agent error: ", error->message));
        }
        // A spare being made is lost: waiting requests ask again.
        if (error.ok() && error->request_id != 0) pool_.SpawnFailed(error->request_id);
        break;
      }
      default:
        break;
    }
  }
}

// A child of the zygote exited: an answered spare's cgroup can go now, else its status is
// kept for the request that waits for it.
void Zygote::HandleDone(wire::ReceivedFrame& received) {
  absl::StatusOr<wire::DoneMessage> done = wire::DecodeDone(received);
  if (!done.ok()) return;
  int status =
      done->exit_kind == wire::ExitKind::kExited ? W_EXITCODE(done->exit_code, 0) : done->exit_code;
  std::unique_ptr<Spare> finished;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto retired = retiring_.find(done->request_id);
    if (retired != retiring_.end()) {
      finished = std::move(retired->second);
      retiring_.erase(retired);
    } else {
      exit_status_[done->request_id] = status;
      // Statuses of spares dropped unused are never asked for: keep only the recent.
      while (exit_status_.size() > kMaxKeptStatuses) exit_status_.erase(exit_status_.begin());
      status_cv_.notify_all();
    }
  }
  if (finished) {
    DestroySpare(std::move(finished));
    // A replacement the pool's Take left for later comes now, once the answered child's
    // exit is over (its teardown would otherwise compete with the reply for a CPU).
    pool_.TopUp();
  }
}

// A spare announced itself. The kernel's credentials, not the frame, say which process
// it is; it must be a child of the agent that said Hello, or it is not admitted.
void Zygote::HandleForked(wire::ReceivedFrame& received) {
  absl::StatusOr<wire::ForkedMessage> forked = wire::DecodeForked(received);
  if (!forked.ok()) return;
  auto spare = std::make_unique<Spare>();
  spare->id = forked->request_id;
  spare->pid = static_cast<pid_t>(received.sender_pid);
  spare->sandbox_pid = static_cast<pid_t>(forked->pid);
  spare->channel = std::move(received.fds[0]);
  std::optional<Clock::time_point> sent = pool_.Claim(spare->id);
  if (!sent.has_value()) return;  // not one we asked for: dropping it closes it
  spare->fork_us = MicrosSince(*sent);
  pid_t agent_pid;
  {
    std::lock_guard<std::mutex> lock(mu_);
    agent_pid = agent_pid_;
  }
  // A spare lost on the way (refused, not admitted): requests waiting for one ask again.
  absl::Cleanup lost = [this] { pool_.Lost(); };
  // Opened before the parent check, so the check vouches for the process the pidfd names.
  if (spare->pid > 0) spare->pidfd.Reset(base::sys::RawPidfdOpen(spare->pid));
  // Asked outside the lock: request threads should not wait behind the kernel (or /proc).
  absl::StatusOr<pid_t> parent = spare->pidfd.valid()
                                     ? base::sys::PidfdParentPid(spare->pidfd.get(), spare->pid)
                                 : spare->pid > 0 ? base::sys::ReadParentPid(spare->pid)
                                                  : absl::NotFoundError("no pid");
  if (!parent.ok() || *parent != agent_pid) {
    LogFor(
        config_.name, LogLevel::kWarning,
        absl::StrCat("refused a spare whose sender pid ", spare->pid, " is not the agent's child"));
    return;
  }
  absl::StatusOr<pid_t> report_pid = process_->SeccompReportPid(spare->pid, spare->sandbox_pid);
  if (!report_pid.ok()) {
    LogFor(config_.name, LogLevel::kWarning, report_pid.status().message());
    return;
  }
  spare->sandbox_pid = *report_pid;
  // A kill reported of an earlier process with this pid (one no request claimed) is not
  // this spare's.
  (void)process_->TakeSeccompKill(spare->sandbox_pid, absl::ZeroDuration());
  absl::Status prepared = PrepareSpare(*spare);
  bool broken = false;
  if (prepared.ok()) {
    prepared = GiveOwnTmp(*spare);
    // A spare alive and still not given its /tmp: no spare of this zygote would be.
    broken = !prepared.ok() && base::sys::RawPidfdSendSignal(spare->pidfd.get(), 0) == 0;
  }
  if (!prepared.ok()) {
    // A sandbox being stopped fails its last spares' mounts: nothing to say then.
    if (stopping_.load() || dead_.load()) {
      DestroySpare(std::move(spare));
      return;
    }
    LogFor(config_.name, LogLevel::kError, prepared.message());
    DestroySpare(std::move(spare));
    if (broken) {
      MarkDead(std::string(prepared.message()));
      process_->Kill();
    }
    return;
  }
  // Admitted and isolated, so what it takes is charged to its own request's cgroup and a
  // Run, which the channel delivers after it, is what the spare may find waiting.
  if (std::shared_ptr<const wire::Frame> prefault = prefault_.frame()) {
    (void)wire::SendFrame(spare->channel.get(), *prefault, {});
  }
  std::move(lost).Cancel();
  pool_.Offer(std::move(spare));
}

// Everything a request would otherwise wait for: its own cgroup and its stdio (its own /tmp
// and the learned prefault follow in HandleForked). An error (to be logged) means the spare
// cannot serve.
absl::Status Zygote::PrepareSpare(Spare& spare) {
  auto admit_start = std::chrono::steady_clock::now();
  if (cgroup_) {
    absl::StatusOr<std::unique_ptr<core::Cgroup>> own = request_cgroups_.Take();
    absl::Status attached = own.ok() ? Admit(spare, **own) : own.status();
    if (own.ok()) spare.cgroup = *std::move(own);
    if (!attached.ok()) {
      kill(spare.pid, SIGKILL);
      return absl::Status(attached.code(),
                          absl::StrCat("cannot admit a spare: ", attached.message()));
    }
  }
  spare.admit_us = MicrosSince(admit_start);
  // The request's stdio, ready before it arrives. Memfds, not pipes: the child never
  // blocks on a full pipe, nobody drains them while it runs, and the pages they fill are
  // charged to the request's own memory cgroup.
  for (int i = 0; i < 3; ++i) {
    static constexpr const char* kNames[] = {"zygo-stdin", "zygo-stdout", "zygo-stderr"};
    spare.stdio[i].Reset(memfd_create(kNames[i], MFD_CLOEXEC));
    if (!spare.stdio[i].valid()) {
      return absl::InternalError(absl::StrCat("memfd_create: ", strerror(errno)));
    }
  }
  return absl::OkStatus();
}

// Into its request cgroup before anything of a request reaches it. On cgroup v1 the spare
// moves itself: a move made by another process waits, after an idle spell, for an RCU
// grace period (6-14 ms measured on these VMs), long enough at 250 requests/s for both
// spares to be taken and a request to wait for the next; a process moving itself never
// does (0.07 ms for four hierarchies). Join is sent here and not waited for: its answer is
// read just before the spare's Run (RequestRun::FinishJoin), since waking this thread once
// more per spare to read it lengthened the tail of requests running meanwhile
// (docs/bench-warm.md run I). The join files could move any process the spare can name
// (only its own sandbox's), so they go only to a fresh spare, whose code is the zygote's,
// and it closes them before any request; see docs/security-model.md.
absl::Status Zygote::Admit(Spare& spare, core::Cgroup& cgroup) {
  if (!join_refused_.load()) {
    absl::StatusOr<std::vector<int>> files = cgroup.SelfJoinFiles();
    if (files.ok() && !files->empty() && files->size() <= wire::kMaxFdsPerFrame) {
      absl::StatusOr<wire::Frame> join = wire::Encode(wire::JoinMessage{});
      if (!join.ok()) return join.status();
      ZYGO_RETURN_IF_ERROR(wire::SendFrame(spare.channel.get(), *join, *files));
      spare.joining = true;
      return absl::OkStatus();
    }
  }
  return cgroup.AttachFromParent(spare.pid);
}

absl::Status Zygote::SendSpawn(uint64_t id) {
  ZYGO_ASSIGN_OR_RETURN(wire::Frame frame, wire::Encode(wire::SpawnMessage{id}));
  return wire::SendFrame(process_->channel(), frame, {});
}

void Zygote::KillSpare(Spare& spare) {
  // The spare itself through its pidfd as well as its cgroup: a zygote's code can answer
  // Join without joining, and such a spare must still die at its request's deadline.
  if (spare.pidfd.valid()) base::sys::RawPidfdSendSignal(spare.pidfd.get(), SIGKILL);
  if (spare.cgroup) {
    spare.cgroup->KillAll().IgnoreError();
  } else if (spare.pid > 0 && !spare.pidfd.valid()) {
    kill(spare.pid, SIGKILL);
  }
}

void Zygote::DestroySpare(std::unique_ptr<Spare> spare) {
  if (!spare) return;
  KillSpare(*spare);
  spare->channel.Reset();
  request_cgroups_.Return(std::move(spare->cgroup), spare->cgroup_reusable && !dead_.load());
}

// An answered spare: its cgroup goes once the zygote has reaped its child (HandleDone), or
// now if that has happened already.
void Zygote::RetireSpare(std::unique_ptr<Spare> spare) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto status = exit_status_.find(spare->id);
    if (status == exit_status_.end() && !dead_.load()) {
      spare->channel.Reset();
      retiring_[spare->id] = std::move(spare);
      return;
    }
    if (status != exit_status_.end()) exit_status_.erase(status);
  }
  DestroySpare(std::move(spare));
  pool_.TopUp();
}

void Zygote::TrimSpares() {
  // Kept cgroups beyond what the spares will need again.
  if (pool_.Trim()) request_cgroups_.Trim(static_cast<size_t>(config_.spares));
}

std::optional<int> Zygote::WaitExitStatus(uint64_t spare_id, absl::Duration wait) {
  std::unique_lock<std::mutex> lock(mu_);
  status_cv_.wait_for(lock, absl::ToChronoMilliseconds(wait),
                      [&] { return exit_status_.count(spare_id) > 0 || dead_.load(); });
  auto found = exit_status_.find(spare_id);
  if (found == exit_status_.end()) return std::nullopt;
  int status = found->second;
  exit_status_.erase(found);
  return status;
}

std::optional<core::SeccompKillNotice> Zygote::TakeSeccompKill(pid_t sandbox_pid,
                                                               absl::Duration wait) {
  return process_->TakeSeccompKill(sandbox_pid, wait);
}

// The pool closes first, so whoever sees dead_ finds its reason there.
void Zygote::MarkDead(const std::string& why) {
  std::deque<std::unique_ptr<Spare>> spares = pool_.Close(why);
  std::map<uint64_t, std::unique_ptr<Spare>> retiring;
  {
    std::lock_guard<std::mutex> lock(mu_);
    dead_.store(true);
    retiring.swap(retiring_);
    hello_cv_.notify_all();
    status_cv_.notify_all();
  }
  for (auto& spare : spares) DestroySpare(std::move(spare));
  for (auto& [id, spare] : retiring) DestroySpare(std::move(spare));
  request_cgroups_.DestroyFree();
}

void Zygote::Stop() {
  if (stopping_.exchange(true)) return;
  if (process_) {
    process_->Kill();
    // Wakes the reader: recv returns 0 once both directions are shut.
    process_->ShutdownChannel();
  }
  if (reader_thread_.joinable()) reader_thread_.join();
  if (process_) process_->Stop();
  MarkDead("stopped");
  request_cgroups_.DestroyFree();
  if (zygote_cgroup_) zygote_cgroup_->Destroy().IgnoreError();
  if (cgroup_) cgroup_->Destroy().IgnoreError();
}

void Zygote::Run(const SpareRequest& request, const CancelSignal& cancel,
                 const std::function<void(ExecReply)>& deliver) {
  RequestRun(*this, request, cancel).Run(deliver);
}

}  // namespace zygo::supervisor
