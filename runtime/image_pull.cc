#include "runtime/image_pull.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <optional>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "core/base/helper_binary.h"
#include "core/base/status_macros.h"
#include "core/base/unique_fd.h"
#include "images/store.h"

namespace zygo::runtime {
namespace {

// Feeds `on_line` each line read from `fd` until EOF but zygo-image's own error ("zygo:
// ...", which the caller's error carries); returns the last non-empty line.
std::string RelayLines(int fd, const std::function<void(const std::string&)>& on_line) {
  const auto relay = [&on_line](const std::string& line) {
    if (!absl::StartsWith(line, "zygo: ")) on_line(line);
  };
  std::string pending, last;
  char buffer[4096];
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending.append(buffer, static_cast<size_t>(n));
    for (size_t end; (end = pending.find('\n')) != std::string::npos;) {
      std::string line = pending.substr(0, end);
      pending.erase(0, end + 1);
      if (line.empty()) continue;
      relay(line);
      last = std::move(line);
    }
  }
  if (!pending.empty()) {
    relay(pending);
    last = pending;
  }
  return last;
}

// Runs zygo-image with `args`; its report goes to stderr, as stdout belongs to the
// command that runs next, or line by line to `on_line` when set.
absl::Status RunImageTool(const std::vector<std::string>& args,
                          const std::function<void(const std::string&)>& on_line) {
  ZYGO_ASSIGN_OR_RETURN(std::string tool, ImageToolPath());
  std::vector<char*> argv = {tool.data()};
  for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  int pipe_fds[2] = {-1, -1};
  if (on_line && pipe2(pipe_fds, O_CLOEXEC) != 0) {
    return absl::InternalError("pipe for zygo-image failed");
  }
  base::UniqueFd read_end(pipe_fds[0]), write_end(pipe_fds[1]);
  pid_t pid = fork();
  if (pid < 0) return absl::InternalError("fork for zygo-image failed");
  if (pid == 0) {
    if (write_end.valid()) dup2(write_end.get(), STDERR_FILENO);
    dup2(STDERR_FILENO, STDOUT_FILENO);
    execv(tool.c_str(), argv.data());
    _exit(127);
  }
  write_end.Reset();
  std::string last;
  if (read_end.valid()) last = RelayLines(read_end.get(), on_line);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::AbortedError(std::string(absl::StripPrefix(last, "zygo: ")));
  }
  return absl::OkStatus();
}

}  // namespace

std::optional<PullPolicy> ParsePullPolicy(absl::string_view name) {
  if (name == "missing") return PullPolicy::kMissing;
  if (name == "always") return PullPolicy::kAlways;
  if (name == "never") return PullPolicy::kNever;
  return std::nullopt;
}

absl::StatusOr<std::string> ImageToolPath() {
  return base::FindHelperBinary("zygo-image", "cli", "the pull/load/login tool");
}

absl::StatusOr<images::RunnableImage> FindOrPullImage(const images::Store& store,
                                                      const images::Reference& reference,
                                                      const std::string& text,
                                                      const PullOptions& options) {
  if (options.policy != PullPolicy::kAlways) {
    ZYGO_ASSIGN_OR_RETURN(std::optional<images::RunnableImage> found,
                          images::FindRunnableImage(store, reference));
    if (found.has_value()) return std::move(*found);
    if (options.policy == PullPolicy::kNever) {
      return absl::NotFoundError(absl::StrCat("image ", reference.Familiar(),
                                              " is not in the store", options.when_missing));
    }
  }
  std::vector<std::string> args = {"pull"};
  if (options.on_progress) args.push_back("--progress=lines");
  if (options.tls_verify == images::TlsVerify::kFalse) args.push_back("--tls-verify=false");
  if (options.tls_verify == images::TlsVerify::kTrue) args.push_back("--tls-verify=true");
  args.push_back(text);
  ZYGO_RETURN_IF_ERROR(RunImageTool(args, options.on_progress));
  ZYGO_ASSIGN_OR_RETURN(std::optional<images::RunnableImage> found,
                        images::FindRunnableImage(store, reference));
  if (!found.has_value()) {
    return absl::InternalError(
        absl::StrCat("image ", reference.Familiar(), " missing after its pull"));
  }
  return std::move(*found);
}

}  // namespace zygo::runtime
