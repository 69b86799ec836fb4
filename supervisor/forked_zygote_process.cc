// A function zygote forked by a runtime zygote: placed, sealed, then told its function.
#include "supervisor/forked_zygote_process.h"

#include <signal.h>
#include <sys/socket.h>

#include <utility>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "agents/wire/channel.h"
#include "core/base/status_macros.h"
#include "core/base/sys/fs.h"
#include "core/base/sys/process.h"

namespace zygo::supervisor {

absl::StatusOr<std::unique_ptr<ForkedZygoteProcess>> ForkedZygoteProcess::Start(
    std::shared_ptr<RuntimeZygote> runtime, const ForkedZygoteSpec& spec, core::Cgroup* cgroup,
    std::string name, absl::Duration timeout) {
  const absl::Time start = absl::Now();
  ZYGO_ASSIGN_OR_RETURN(ForkedZygote forked, runtime->Fork(timeout));
  std::unique_ptr<ForkedZygoteProcess> process(
      new ForkedZygoteProcess(std::move(runtime), std::move(forked), std::move(name)));
  process->fork_time_ = absl::Now() - start;
  // A zygote that could not be sealed must never go on: it would still be the runtime's.
  absl::Cleanup kill = [&process] { process->Kill(); };
  ZYGO_RETURN_IF_ERROR(process->Seal(spec, cgroup));
  std::move(kill).Cancel();
  return process;
}

ForkedZygoteProcess::ForkedZygoteProcess(std::shared_ptr<RuntimeZygote> runtime,
                                         ForkedZygote forked, std::string name)
    : runtime_(std::move(runtime)),
      channel_(std::move(forked.channel)),
      pid_(forked.pid),
      pidfd_(std::move(forked.pidfd)),
      log_(std::move(name)) {}

ForkedZygoteProcess::~ForkedZygoteProcess() { Stop(); }

// Its cgroup first, so that what it allocates from here on is the function's; then its
// namespaces, from outside; then Seal, after which it seals itself and imports.
absl::Status ForkedZygoteProcess::Seal(const ForkedZygoteSpec& spec, core::Cgroup* cgroup) {
  // Its spares' Forked frames arrive on this channel: the kernel must name their senders.
  ZYGO_RETURN_IF_ERROR(wire::EnablePeerCredentials(channel_.get()));
  absl::Time start = absl::Now();
  if (cgroup != nullptr) ZYGO_RETURN_IF_ERROR(cgroup->AttachFromParent(pid_));
  cgroup_time_ = absl::Now() - start;
  start = absl::Now();
  const core::ForkedZygoteTarget target{runtime_->init_pid(), runtime_->init_pidfd(), pid_,
                                        pidfd_.get()};
  ZYGO_RETURN_IF_ERROR(core::SealForkedZygote(target, spec.namespaces));
  seal_time_ = absl::Now() - start;
  ZYGO_ASSIGN_OR_RETURN(base::UniqueFd log_write, log_.Open());
  ZYGO_ASSIGN_OR_RETURN(wire::Frame seal, wire::Encode(spec.seal));
  const int fds[] = {log_write.get()};
  return wire::SendFrame(channel_.get(), seal, fds);
}

std::string ForkedZygoteProcess::StartBreakdown() const {
  return absl::StrFormat(
      "fork %.1f ms, cgroup %.1f ms, seal %.1f ms", absl::ToDoubleMilliseconds(fork_time_),
      absl::ToDoubleMilliseconds(cgroup_time_), absl::ToDoubleMilliseconds(seal_time_));
}

void ForkedZygoteProcess::ShutdownChannel() { shutdown(channel_.get(), SHUT_RDWR); }

void ForkedZygoteProcess::Kill() {
  // pid 1 of the function's pid namespace: every process of the function dies with it.
  base::sys::RawPidfdSendSignal(pidfd_.get(), SIGKILL);
}

void ForkedZygoteProcess::Stop() {
  Kill();
  ShutdownChannel();
  log_.Join();
}

absl::StatusOr<pid_t> ForkedZygoteProcess::SeccompReportPid(pid_t pid, pid_t announced) const {
  ZYGO_ASSIGN_OR_RETURN(std::vector<pid_t> pids, base::sys::ReadNamespacePids(pid));
  // Ours, the runtime sandbox's, the function's: the runtime's zygo-init sees the second.
  if (pids.size() < 3) {
    return absl::FailedPreconditionError(
        absl::StrCat("spare ", pid, " is not in a function's own pid namespace"));
  }
  return pids[pids.size() - 2];
}

}  // namespace zygo::supervisor
