// The runtime zygote's spare becoming a function zygote: namespaces, the fork into its own
// pid namespace, Forked, and the wait for Seal.
#include "agents/zygote/function_fork.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "agents/isolation/function_zygote_seal.h"
#include "agents/wire/channel.h"
#include "agents/wire/messages.h"

namespace zygo::agents::zygote {
namespace {

constexpr int kFunctionNamespaces =
    CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS;

[[noreturn]] void Fail(const std::string& what) {
  ::dprintf(2, "zygo-agent: function zygote: %s\n", what.c_str());
  ::_exit(kFunctionNotSealed);
}

// Everything but the three stdio fds and `keep` is closed: the runtime zygote's fds are not
// the function's.
void CloseAllBut(int keep_a, int keep_b) {
  int low = 3;
  for (int keep : {std::min(keep_a, keep_b), std::max(keep_a, keep_b)}) {
    if (keep >= low) {
      if (keep > low) ::close_range(low, keep - 1, 0);
      low = keep + 1;
    }
  }
  ::close_range(low, ~0U, 0);
}

// The intermediate process: waits for the function zygote's word (a 0 once Forked is
// sent), so that the runtime's Done says whether it got that far.
[[noreturn]] void AwaitAnnouncement(int ready) {
  char word = 1;
  ssize_t n;
  do {
    n = ::read(ready, &word, 1);
  } while (n < 0 && errno == EINTR);
  ::_exit(n == 1 && word == 0 ? kFunctionForked : kFunctionNotAnnounced);
}

bool Send(int channel, const absl::StatusOr<wire::Frame>& frame) {
  return frame.ok() && wire::SendFrame(channel, *frame, {}).ok();
}

// Serves the function's channel until Seal (answering Ping), then applies it.
SealedFunction AwaitSeal(base::UniqueFd channel) {
  for (;;) {
    absl::StatusOr<wire::ReceivedFrame> received =
        wire::ReceiveFrame(channel.get(), absl::InfiniteDuration());
    if (wire::IsPeerClosed(received.status())) ::_exit(0);  // Retired unused.
    if (!received.ok()) Fail(absl::StrCat("its channel: ", received.status().ToString()));
    if (received->frame.type == wire::MessageType::kPing) {
      Send(channel.get(), wire::Encode(wire::PongMessage{received->frame.request_id}));
      continue;
    }
    if (received->frame.type != wire::MessageType::kSeal) {
      Send(channel.get(), wire::Encode(wire::ErrorMessage{
                              0, absl::StatusCode::kInvalidArgument,
                              absl::StrCat("a function zygote waiting for Seal "
                                           "does not take ",
                                           wire::MessageTypeName(received->frame.type))}));
      continue;
    }
    absl::StatusOr<wire::SealMessage> seal = wire::DecodeSeal(*received);
    if (!seal.ok()) Fail(absl::StrCat("Seal: ", seal.status().ToString()));
    // From here on what it prints is the function's log, not the runtime's.
    const int log = received->fds[0].get();
    if (::dup2(log, 1) < 0 || ::dup2(log, 2) < 0) Fail("dup2(the function's log)");
    received->fds.clear();
    absl::StatusOr<int> abi =
        isolation::SealFunctionZygote({seal->seccomp_filter, seal->workdir, seal->env});
    if (!abi.ok()) Fail(abi.status().ToString());
    return SealedFunction{std::move(channel), *std::move(seal), *abi};
  }
}

}  // namespace

SealedFunction BecomeFunctionZygote(const SpareContext& context) {
  if (::unshare(kFunctionNamespaces) != 0) ::_exit(kFunctionNoNamespaces);
  int ready[2];
  if (::pipe2(ready, O_CLOEXEC) != 0) ::_exit(kFunctionNoFork);
  const pid_t pid = ::fork();
  if (pid < 0) ::_exit(kFunctionNoFork);
  if (pid > 0) {
    ::close(ready[1]);
    AwaitAnnouncement(ready[0]);
  }
  // pid 1 of its own pid namespace; its parent ends once it has announced itself, and the
  // runtime sandbox's init inherits it.
  ::close(ready[0]);
  CloseAllBut(context.zygote_channel, ready[1]);
  // The runtime unblocked SIGCHLD for its spares; a zygote reads it from a signalfd.
  if (!BlockChildSignal().ok()) ::_exit(kFunctionNotAnnounced);
  absl::StatusOr<base::UniqueFd> channel = AnnounceSpare(context);
  const char word = channel.ok() ? 0 : 1;
  // The intermediate process reads EOF as a failure too, so a lost byte is no worse.
  (void)!::write(ready[1], &word, 1);
  ::close(ready[1]);
  if (!channel.ok()) ::_exit(kFunctionNotAnnounced);
  return AwaitSeal(*std::move(channel));
}

}  // namespace zygo::agents::zygote
