// A spare's life after fork: hand the supervisor a child channel (Forked, sent by the
// child itself), apply its isolation (its own namespaces and /tmp, Landlock domain, death
// with the zygote), then wait for one Run, taking the pages a Prefault names first.
#ifndef ZYGO_AGENTS_PYTHON_SPARE_H_
#define ZYGO_AGENTS_PYTHON_SPARE_H_

#include <utility>

#include "absl/status/statusor.h"
#include "agents/isolation/isolation.h"
#include "agents/python/interpreter.h"
#include "agents/python/request.h"
#include "agents/zygote/zygote.h"

namespace zygo::agents::python {

class PythonSpareRunner : public zygote::SpareRunner {
 public:
  // `function` is function mode's handler (borrowed from the zygote, which keeps it alive);
  // null in pool mode. `verbose` prints each spare's preparation costs on stderr.
  // `landlock` is the zygote's, prepared once; a failure to prepare it fails every spare's
  // isolation, reported by its Run.
  PythonSpareRunner(Interpreter& interpreter, PyObject* function,
                    absl::StatusOr<isolation::LandlockBase> landlock, bool verbose)
      : interpreter_(interpreter),
        function_(function),
        landlock_(std::move(landlock)),
        verbose_(verbose) {}

  void BeforeFork() override;
  void AfterForkInParent() override;
  [[noreturn]] void RunSpare(const zygote::SpareContext& context) override;

 private:
  // The isolation steps, in order; the first failure is kept for the Run to report.
  absl::Status Isolate();
  // Takes the Prefault's pages, unless a Run is already waiting on `channel`.
  void Prefault(int channel, const wire::ReceivedFrame& received);

  Interpreter& interpreter_;
  PyObject* function_;
  absl::StatusOr<isolation::LandlockBase> landlock_;
  bool verbose_;
  uint64_t spare_id_ = 0;
};

}  // namespace zygo::agents::python

#endif  // ZYGO_AGENTS_PYTHON_SPARE_H_
