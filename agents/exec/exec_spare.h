// A warm-exec spare's life after fork: hand the supervisor a child channel (Forked, sent by
// the child itself), set itself apart from the other requests (death with the zygote, its
// own namespaces and /tmp, its own Landlock domain), join its request cgroup when asked,
// then wait for one Run and become the function's command with the Run's stdio.
#ifndef ZYGO_AGENTS_EXEC_EXEC_SPARE_H_
#define ZYGO_AGENTS_EXEC_EXEC_SPARE_H_

#include <cstdint>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agents/isolation/isolation.h"
#include "agents/wire/frame.h"
#include "agents/zygote/zygote.h"

namespace zygo::agents::exec {

class ExecSpareRunner : public zygote::SpareRunner {
 public:
  // `command` is the function's argv, null-terminated and alive as long as the zygote.
  // `landlock` is the zygote's, prepared once; a failure to prepare it fails every spare's
  // isolation, which its Run then reports as SetupError.
  ExecSpareRunner(char** command, absl::StatusOr<isolation::LandlockBase> landlock)
      : command_(command), landlock_(std::move(landlock)) {}

  // Nothing to do around a fork: the exec agent has no runtime of its own.
  void BeforeFork() override {}
  void AfterForkInParent() override {}
  [[noreturn]] void RunSpare(const zygote::SpareContext& context) override;

 private:
  // isolation::IsolateSpareForChildren. The zygote's fds of "/" are closed whatever fails.
  absl::Status Isolate();
  // Installs the Run's stdio and execs the command; a failure is Failed("ExecError").
  [[noreturn]] void Exec(int channel, const wire::ReceivedFrame& received, uint64_t request_id,
                         bool stdio);

  char** command_;
  absl::StatusOr<isolation::LandlockBase> landlock_;
};

}  // namespace zygo::agents::exec

#endif  // ZYGO_AGENTS_EXEC_EXEC_SPARE_H_
