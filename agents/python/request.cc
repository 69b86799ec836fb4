// The request path inside a spare: stdio, event, handler call, result, report, _exit.
#include "agents/python/request.h"

#include <sched.h>
#include <unistd.h>

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agents/python/prefault.h"
#include "agents/python/py_json.h"
#include "agents/wire/channel.h"
#include "agents/wire/event_memfd.h"
#include "core/base/sys/sched_attr.h"

namespace zygo::agents::python {
namespace {

// Room left in a Done frame's payload for the result after its two integer fields and the
// result field's own header.
constexpr size_t kMaxResultSize = wire::kMaxPayloadSize - 64;
// The same room for a Compiled frame's bytecode.
constexpr size_t kMaxBytecodeSize = wire::kMaxPayloadSize - 64;

// The last bytes of a traceback: its end names the exception and the innermost frames.
std::string Tail(const std::string& text, size_t limit) {
  if (text.size() <= limit) return text;
  constexpr absl::string_view kCut = "...(traceback truncated)\n";
  size_t start = text.size() - (limit - kCut.size());
  while (start < text.size() && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) ++start;
  return absl::StrCat(kCut, text.substr(start));
}

// Everything after the answer (the page report, the exit: ~0.5 ms of tearing down a
// copy of the interpreter) is work nobody waits for. The supervisor thread the answer
// wakes, and then the client its reply wakes, are often placed on this CPU. The
// background slice is taken before the answer: the supervisor thread preempts this
// process inside the send, and when it sleeps again the scheduler must pick the client,
// not this process at the spare's short slice (traced: the client waited ~0.6 ms for the
// exit, the other CPU idle). The yield after the answer is what is left on kernels without
// custom slices (before 6.12), where the woken thread would otherwise wait for the next
// tick.
void BecomeBackgroundWork() { (void)base::sys::RawRequestSlice(base::sys::kBackgroundSliceNs); }
void GiveWayAfterTheAnswer() { ::sched_yield(); }

[[noreturn]] void ReportFailed(const PreparedSpare& spare, uint64_t request_id,
                               const PythonError& error) {
  spare.interpreter->FlushStdio();
  const wire::FailedMessage failed{request_id, wire::Head(error.type, wire::kMaxErrorTypeSize),
                                   wire::Head(error.message, wire::kMaxFailedMessageSize),
                                   Tail(error.traceback, wire::kMaxTracebackSize)};
  absl::StatusOr<wire::Frame> frame = wire::Encode(failed);
  BecomeBackgroundWork();
  if (frame.ok()) (void)wire::SendFrame(spare.channel, *frame, {});
  GiveWayAfterTheAnswer();
  ::_exit(1);
}

// After the answer, off the request's time: the pages this process touched (and the code
// pages it mapped since `before`), for the supervisor to have later spares take ahead of
// their requests (prefault.h).
void ReportTouched(const PreparedSpare& spare, uint64_t request_id, const MappedFilePages* before) {
  absl::StatusOr<std::vector<wire::PageRun>> runs = ScanTouchedPages(before);
  if (!runs.ok()) return;
  absl::StatusOr<wire::Frame> frame =
      wire::Encode(wire::TouchedMessage{request_id, *std::move(runs)});
  if (frame.ok()) (void)wire::SendFrame(spare.channel, *frame, {});
}

[[noreturn]] void ReportDone(const PreparedSpare& spare, const wire::RunMessage& run,
                             std::string json, const MappedFilePages* mapped_before) {
  spare.interpreter->FlushStdio();
  absl::StatusOr<wire::Frame> frame =
      wire::Encode(wire::DoneMessage{run.request_id, wire::ExitKind::kExited, 0, std::move(json)});
  if (!frame.ok()) {
    ReportFailed(spare, run.request_id, {"ResultError", std::string(frame.status().message()), ""});
  }
  BecomeBackgroundWork();
  if (!wire::SendFrame(spare.channel, *frame, {}).ok()) ::_exit(2);
  GiveWayAfterTheAnswer();
  if (run.report_touched) ReportTouched(spare, run.request_id, mapped_before);
  ::_exit(0);
}

// Makes the request's stdin, stdout and stderr fds 0, 1 and 2 (dup2 clears CLOEXEC, and
// Python's sys.std* objects keep writing to those numbers).
absl::Status InstallStdio(wire::ReceivedFrame& received) {
  for (int target = 0; target < 3; ++target) {
    if (::dup2(received.fds[target].get(), target) < 0) {
      return absl::InternalError(absl::StrCat("dup2(request fd -> ", target, ") failed"));
    }
  }
  received.fds.clear();
  return absl::OkStatus();
}

// A runtime pool's script: loaded from the bytecode an earlier spare of this zygote sent,
// or compiled here. A fresh compile goes back to the supervisor as Compiled before any of
// the script runs and before the event is decoded, so the bytecode depends on the script's
// source alone; later spares given it skip the compiler (about 0.1 ms and 60 copy-on-write
// faults for a small script, measured on these VMs).
PyRef LoadPoolScript(const PreparedSpare& spare, const wire::RunMessage& run) {
  const uint64_t id = run.request_id;
  if (run.code.empty() && run.bytecode.empty()) {
    ReportFailed(spare, id,
                 {"EntryError", absl::StrCat("pool entry ", run.entry, " came without code"), ""});
  }
  const std::string filename = absl::StrCat(run.entry, ".py");
  Interpreter& interpreter = *spare.interpreter;
  CallResult code = run.bytecode.empty() ? interpreter.CompileScript(run.code, filename)
                                         : interpreter.LoadCode(run.bytecode);
  if (auto* error = std::get_if<PythonError>(&code)) ReportFailed(spare, id, *error);
  PyObject* code_object = std::get<PyRef>(code).get();
  if (run.bytecode.empty()) {
    absl::StatusOr<std::string> bytes = interpreter.DumpCode(code_object);
    // Too big for one frame: this script is simply compiled every time.
    if (bytes.ok() && bytes->size() <= kMaxBytecodeSize) {
      absl::StatusOr<wire::Frame> frame =
          wire::Encode(wire::CompiledMessage{id, *std::move(bytes)});
      if (frame.ok()) (void)wire::SendFrame(spare.channel, *frame, {});
    }
  }
  CallResult loaded = interpreter.RunScript(code_object, filename);
  if (auto* error = std::get_if<PythonError>(&loaded)) ReportFailed(spare, id, *error);
  return std::move(std::get<PyRef>(loaded));
}

}  // namespace

void RunRequest(const PreparedSpare& spare, wire::ReceivedFrame& received,
                const wire::RunMessage& run) {
  const PythonApi& api = spare.interpreter->api();
  const uint64_t id = run.request_id;
  // Only for a request that reports (a zygote's first two): this scan costs it ~0.05 ms.
  std::optional<MappedFilePages> mapped_before;
  if (run.report_touched) {
    absl::StatusOr<MappedFilePages> snapshot = SnapshotMappedFilePages();
    if (snapshot.ok()) mapped_before = *std::move(snapshot);
  }
  if (run.fd_layout == wire::FdLayout::kResultPipe) {
    // A protocol mismatch rather than a failed request: the result travels in Done.
    const wire::ErrorMessage error{id, absl::StatusCode::kUnimplemented,
                                   "the python agent takes fd layouts none and stdio"};
    (void)wire::SendFrame(spare.channel, *wire::Encode(error), {});
    ::_exit(1);
  }
  // An event too large for the frame rides in a sealed memfd after the layout's fds (v6):
  // read before InstallStdio closes the Run's fds, and closed, so the handler never has it.
  std::string event_from_fd;
  if (run.event_fd_size != 0) {
    base::UniqueFd& fd = received.fds[wire::FdCount(run.fd_layout)];
    absl::StatusOr<std::string> read = wire::ReadEventMemfd(fd.get(), run.event_fd_size);
    fd.Reset();
    if (!read.ok()) {
      ReportFailed(spare, id, {"EventError", std::string(read.status().message()), ""});
    }
    event_from_fd = *std::move(read);
  }
  const absl::string_view event_text = run.event_fd_size != 0 ? event_from_fd : run.event;
  if (run.fd_layout == wire::FdLayout::kStdio) {
    if (absl::Status status = InstallStdio(received); !status.ok()) {
      ReportFailed(spare, id, {"SetupError", status.ToString(), ""});
    }
  }

  // The script first: its bytecode goes back before the event is even decoded.
  PyRef handler = spare.function != nullptr ? PyRef::Borrow(api, spare.function)
                                            : LoadPoolScript(spare, run);

  // An absent event is None: the protocol does not send empty fields.
  PyRef event = PyRef::Borrow(api, api.None());
  if (!event_text.empty()) {
    absl::StatusOr<PyRef> parsed = JsonToPython(api, event_text);
    if (!parsed.ok())
      ReportFailed(spare, id, {"EventError", std::string(parsed.status().message()), ""});
    event = std::move(*parsed);
  }
  std::string().swap(event_from_fd);  // Not held through the call: the handler needs the memory.

  CallResult result = spare.interpreter->Call(handler.get(), event.get());
  if (auto* error = std::get_if<PythonError>(&result)) ReportFailed(spare, id, *error);
  absl::StatusOr<std::string> json =
      PythonToJson(api, std::get<PyRef>(result).get(), kMaxResultSize);
  if (!json.ok())
    ReportFailed(spare, id, {"ResultError", std::string(json.status().message()), ""});
  ReportDone(spare, run, std::move(*json), mapped_before ? &*mapped_before : nullptr);
}

}  // namespace zygo::agents::python
