// A Node spare's life after fork: hand the supervisor a child channel (Forked), set itself
// apart from the other requests (death with the zygote, its own namespaces and /tmp, its
// own Landlock domain), join its request cgroup when asked, then start its Node worker
// (node_worker.h) ahead of the request, so the worker is born in the request's cgroup and
// domain with the handler loaded by the time the Run arrives.
#ifndef ZYGO_AGENTS_NODE_NODE_SPARE_H_
#define ZYGO_AGENTS_NODE_NODE_SPARE_H_

#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agents/isolation/isolation.h"
#include "agents/node/node_worker.h"
#include "agents/zygote/zygote.h"

namespace zygo::agents::node {

class NodeSpareRunner : public zygote::SpareRunner {
 public:
  // `landlock` is the zygote's, prepared once; a failure to prepare it fails every spare's
  // isolation, which its Run then reports as SetupError.
  NodeSpareRunner(WorkerCommand command, absl::StatusOr<isolation::LandlockBase> landlock)
      : command_(std::move(command)), landlock_(std::move(landlock)) {}

  // Nothing to do around a fork: the zygote runs no JavaScript of its own.
  void BeforeFork() override {}
  void AfterForkInParent() override {}
  [[noreturn]] void RunSpare(const zygote::SpareContext& context) override;

 private:
  // The Landlock domain, TMPDIR=/tmp, then the worker, waited for until it has loaded the
  // handler; unless this spare could not join its cgroup: the supervisor then moves the
  // spare just before its Run, and a worker started now would stay outside, so it starts
  // at the Run instead.
  absl::Status Isolate();

  WorkerCommand command_;
  absl::StatusOr<isolation::LandlockBase> landlock_;
  bool join_failed_ = false;
  std::optional<Worker> worker_;
};

}  // namespace zygo::agents::node

#endif  // ZYGO_AGENTS_NODE_NODE_SPARE_H_
