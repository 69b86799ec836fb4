// A spare's own /tmp, given between its admission and its first frame of a request.
#include "agents/wire/channel.h"
#include "agents/wire/messages.h"
#include "core/base/status_macros.h"
#include "core/nested_tmp.h"
#include "supervisor/zygote.h"

namespace zygo::supervisor {

// A fresh tmpfs on the spare's /tmp, in the mount namespace it made itself, then Isolate:
// the spare stacks its Landlock domain over it. Sized as the request's memory (its pages
// are charged to the request's cgroup), or as the sandbox's /tmp when that is unlimited.
// After PrepareSpare's Join, before the Prefault.
absl::Status Zygote::GiveOwnTmp(Spare& spare) {
  const core::NestedTmpTarget target{process_->namespace_root(), process_->namespace_root_pidfd(),
                                     spare.pid, spare.pidfd.get()};
  const core::Spec& spec = config_.sandbox.plan.spec;
  const int64_t memory = config_.request_limits.memory_bytes;
  const core::NestedTmpOptions options{memory > 0 ? memory : spec.tmp_size_bytes, spec.gid};
  ZYGO_RETURN_IF_ERROR(core::MountOwnTmp(target, options));
  ZYGO_ASSIGN_OR_RETURN(wire::Frame isolate, wire::Encode(wire::IsolateMessage{}));
  return wire::SendFrame(spare.channel.get(), isolate, {});
}

}  // namespace zygo::supervisor
