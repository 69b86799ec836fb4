// One request in a prepared spare: Run's event becomes a Python object, the handler runs,
// its return value goes back as JSON in Done, or its exception as Failed; then the child
// _exits (0 after Done, 1 after Failed), so no Python exit handler ever runs.
#ifndef ZYGO_AGENTS_PYTHON_REQUEST_H_
#define ZYGO_AGENTS_PYTHON_REQUEST_H_

#include "agents/python/interpreter.h"
#include "agents/wire/frame.h"
#include "agents/wire/messages.h"

namespace zygo::agents::python {

// Everything a spare has ready before its Run arrives.
struct PreparedSpare {
  Interpreter* interpreter = nullptr;
  PyObject* function = nullptr;  // Function mode's handler; null in pool mode (Run's code).
  int channel = -1;              // The child channel.
};

// Runs `run` (whose fds `received` still owns) and exits. Child side only, in an isolated
// spare (zygote::ServeChildChannel refuses the Run of another).
[[noreturn]] void RunRequest(const PreparedSpare& spare, wire::ReceivedFrame& received,
                             const wire::RunMessage& run);

}  // namespace zygo::agents::python

#endif  // ZYGO_AGENTS_PYTHON_REQUEST_H_
