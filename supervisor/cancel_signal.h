// Interrupts a request from another thread (its caller hung up): an eventfd a request's
// poll loop watches, so cancelling wakes it at once.
#ifndef ZYGO_SUPERVISOR_CANCEL_SIGNAL_H_
#define ZYGO_SUPERVISOR_CANCEL_SIGNAL_H_

#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

#include "core/base/unique_fd.h"

namespace zygo::supervisor {

class CancelSignal {
 public:
  CancelSignal() : event_fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}
  CancelSignal(const CancelSignal&) = delete;
  CancelSignal& operator=(const CancelSignal&) = delete;

  void Cancel() {
    if (cancelled_.exchange(true)) return;
    uint64_t one = 1;
    if (event_fd_.valid()) (void)!write(event_fd_.get(), &one, sizeof(one));
  }
  bool cancelled() const { return cancelled_.load(); }
  // Readable once cancelled; -1 if no eventfd could be made (then poll on cancelled()).
  int fd() const { return event_fd_.get(); }

 private:
  base::UniqueFd event_fd_;
  std::atomic<bool> cancelled_{false};
};

}  // namespace zygo::supervisor

#endif  // ZYGO_SUPERVISOR_CANCEL_SIGNAL_H_
