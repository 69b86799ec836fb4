// One request on one spare of a zygote: take a spare, finish its join, send the event
// with memfds for stdin/stdout/stderr, wait for the answer, the deadline or the caller's
// cancel, say how it ended, then retire the spare. Parent side, on the request's thread.
#ifndef ZYGO_SUPERVISOR_REQUEST_RUN_H_
#define ZYGO_SUPERVISOR_REQUEST_RUN_H_

#include <chrono>
#include <functional>
#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "core/cgroup.h"
#include "core/launch.h"
#include "supervisor/cancel_signal.h"
#include "supervisor/service.h"
#include "supervisor/zygote.h"
#include "supervisor/zygote_spare.h"

namespace zygo::supervisor {

class RequestRun {
 public:
  // `zygote`, `request` and `cancel` must outlive the run.
  RequestRun(Zygote& zygote, const SpareRequest& request, const CancelSignal& cancel);
  RequestRun(const RequestRun&) = delete;
  RequestRun& operator=(const RequestRun&) = delete;

  // Runs the request and calls `deliver` with the reply as soon as it is known; then
  // hands its spare back (its cgroup goes once the zygote has reaped the child). Once.
  void Run(const std::function<void(ExecReply)>& deliver);

 private:
  using Clock = std::chrono::steady_clock;
  enum class Ending;  // how the answer came, or did not (request_run.cc)
  struct Answer;

  absl::Status Send();
  absl::Status FinishJoin();
  absl::Status SendRun();
  Answer AwaitAnswer() const;
  std::optional<int> AwaitExit(Answer& answer);
  core::CgroupUsage ReadUsage(const Answer& answer) const;
  void Describe(const Answer& answer, std::optional<int> status);
  static void DescribeEnding(const Answer& answer, std::optional<int> status,
                             const core::CgroupUsage& usage, ExecReply* reply);
  static void DescribeEnd(const Answer& answer, std::optional<int> status,
                          const core::CgroupUsage& usage,
                          const std::optional<core::SeccompKillNotice>& seccomp_kill,
                          ExecReply* reply);
  void LearnTouched();
  void Retire(Ending ending, bool reaped);

  Zygote& zygote_;
  const SpareRequest& request_;
  const CancelSignal& cancel_;
  const Clock::time_point start_;
  const Clock::time_point deadline_;
  const bool report_touched_;  // this request's child reports the pages it touched
  ExecReply reply_;
  std::unique_ptr<Spare> spare_;
  bool sent_code_ = false;  // the Run carried a pool script's source, not its bytecode
  Clock::time_point sent_at_;
  Clock::time_point answered_at_;
};

}  // namespace zygo::supervisor

#endif  // ZYGO_SUPERVISOR_REQUEST_RUN_H_
