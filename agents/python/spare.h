// A spare's life after fork: hand the supervisor a child channel (Forked, sent by the
// child itself), apply its isolation (private temp dir, Landlock domain, death with the
// zygote), then wait for one Run, prefaulting its memory once it has been idle a while.
#ifndef ZYGO_AGENTS_PYTHON_SPARE_H_
#define ZYGO_AGENTS_PYTHON_SPARE_H_

#include <optional>

#include "agents/python/interpreter.h"
#include "agents/python/prefault.h"
#include "agents/python/request.h"
#include "agents/python/zygote.h"

namespace zygo::agents::python {

class PythonSpareRunner : public SpareRunner {
 public:
  // `function` is function mode's handler (borrowed from the zygote, which keeps it alive);
  // null in pool mode. `verbose` prints each spare's preparation costs on stderr.
  PythonSpareRunner(Interpreter& interpreter, PyObject* function, bool verbose)
      : interpreter_(interpreter), function_(function), verbose_(verbose) {}

  void BeforeFork() override;
  void AfterForkInParent() override;
  [[noreturn]] void RunSpare(const SpareContext& context) override;

 private:
  // The isolation steps, in order; the first failure is kept for the Run to report.
  absl::Status Isolate(uint64_t spare_id);
  // Serves the child channel until a Run (then never returns) or EOF (exit 0), with the
  // prefault as its idle work.
  [[noreturn]] void ServeChildChannel(PreparedSpare& spare);
  // Returns when `channel` is readable: first waits until the spare has been idle (since
  // `idle_from`) long enough, then prefaults in slices until done or a frame arrives.
  void PrefaultWhileIdle(int channel, absl::Time idle_from);
  // Stops the prefault for good (reporting it when verbose) and closes its pagemap fd.
  void EndPrefault();

  Interpreter& interpreter_;
  PyObject* function_;
  bool verbose_;
  uint64_t spare_id_ = 0;
  std::optional<Prefaulter> prefault_;
  bool prefault_over_ = false;
};

}  // namespace zygo::agents::python

#endif  // ZYGO_AGENTS_PYTHON_SPARE_H_
