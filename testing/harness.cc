#include "testing/harness.h"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace zygo::testing {
namespace {

std::string TempPath(const std::string& name) {
  const char* dir = getenv("TEST_TMPDIR");
  return absl::StrCat(dir != nullptr ? dir : "/tmp", "/", name, ".", getpid(), ".",
                      std::chrono::steady_clock::now().time_since_epoch().count());
}

// Reads both pipes until both close or the deadline passes.
void Drain(int out_fd, int err_fd, RunResult* result, int timeout_seconds, pid_t pid) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds);
  struct pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  int open_count = 2;
  while (open_count > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      kill(pid, SIGKILL);
      result->err += "\n[harness: killed zygo after the test's timeout]\n";
      return;
    }
    if (poll(fds, 2, static_cast<int>(left.count())) < 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
      char buffer[4096];
      ssize_t n = read(fds[i].fd, buffer, sizeof(buffer));
      if (n <= 0) {
        fds[i].fd = -1;
        --open_count;
      } else {
        (i == 0 ? result->out : result->err).append(buffer, n);
      }
    }
  }
}

}  // namespace

RunResult RunOnHost(const std::vector<std::string>& argv, const RunOptions& options) {
  RunResult result;
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) return result;
  pid_t pid = fork();
  if (pid == 0) {
    int in = options.stdin_fd >= 0 ? options.stdin_fd : open("/dev/null", O_RDONLY);
    dup2(in, 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    for (const std::string& var : options.env) putenv(const_cast<char*>(var.c_str()));
    if (options.as_gid >= 0 && (setgroups(0, nullptr) != 0 || setgid(options.as_gid) != 0))
      _exit(121);
    if (options.as_uid >= 0 && setuid(options.as_uid) != 0) _exit(122);
    std::vector<char*> args;
    for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(120);
  }
  close(out[1]);
  close(err[1]);
  Drain(out[0], err[0], &result, options.timeout_seconds, pid);
  close(out[0]);
  close(err[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.term_signal = WTERMSIG(status);
  return result;
}

absl::StatusOr<TestImage> BuildTestImage(const std::string& name, const RunOptions& options) {
  RunResult built = RunOnHost({Runfile("tools/images/build"), name}, options);
  std::smatch match;
  static const std::regex kReport("IMAGE=([^ ]+) DIGEST=([^ \\n]+)");
  if (built.exit_code != 0 || !std::regex_search(built.out, match, kReport)) {
    const std::string& err = built.err;
    return absl::FailedPreconditionError(
        absl::StrCat("tools/images/build ", name,
                     " failed: ", err.substr(err.size() > 600 ? err.size() - 600 : 0)));
  }
  return TestImage{match[1], match[2]};
}

std::string Runfile(const std::string& path) {
  const char* root = getenv("TEST_SRCDIR");
  return absl::StrCat(root != nullptr ? root : ".", "/zygo/", path);
}

int LineCount(const std::string& text) {
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

std::string ZygoPath() { return Runfile("cli/zygo"); }
std::string ProbePath() { return Runfile("security_tests/testcases/escape_probe"); }

RunResult RunZygo(const std::vector<std::string>& flags, const std::string& image,
                  const std::vector<std::string>& argv, const RunOptions& options) {
  std::vector<std::string> command = {
      options.zygo_binary.empty() ? ZygoPath() : options.zygo_binary, "run"};
  std::string outcome_path;
  if (options.want_outcome) {
    outcome_path = TempPath("outcome.json");
    command.push_back("--outcome");
    command.push_back(outcome_path);
  }
  command.insert(command.end(), flags.begin(), flags.end());
  command.push_back(image);
  command.insert(command.end(), argv.begin(), argv.end());
  RunResult result = RunOnHost(command, options);
  if (!outcome_path.empty()) {
    std::ifstream file(outcome_path);
    std::stringstream text;
    text << file.rdbuf();
    result.outcome_json = text.str();
    unlink(outcome_path.c_str());
  }
  return result;
}

RunResult RunProbe(const std::vector<std::string>& probe_args,
                   const std::vector<std::string>& extra_flags, const RunOptions& options) {
  std::vector<std::string> flags = {"-v", ProbePath() + ":/probe:ro"};
  flags.insert(flags.end(), extra_flags.begin(), extra_flags.end());
  std::vector<std::string> argv = {"/probe"};
  argv.insert(argv.end(), probe_args.begin(), probe_args.end());
  return RunZygo(flags, "host", argv, options);
}

RunResult RunProbeOnHost(const std::vector<std::string>& probe_args, const RunOptions& options) {
  std::vector<std::string> argv = {ProbePath()};
  argv.insert(argv.end(), probe_args.begin(), probe_args.end());
  return RunOnHost(argv, options);
}

std::string Verdict(const RunResult& result, const std::string& subcommand) {
  std::istringstream lines(result.out);
  std::string line;
  std::string prefix = absl::StrCat("RESULT ", subcommand, " ");
  while (std::getline(lines, line)) {
    if (absl::StartsWith(line, prefix)) return line.substr(prefix.size());
  }
  return "";
}

std::string OutcomeField(const RunResult& result, const std::string& key) {
  std::regex pattern(absl::StrCat("\"", key, "\": ([^,\\n]+)"));
  std::smatch match;
  if (std::regex_search(result.outcome_json, match, pattern)) return match[1];
  return "";
}

std::string ReadProcFile(const std::string& path) {
  std::string text;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return text;
  char buffer[4096];
  ssize_t n;
  while ((n = read(fd, buffer, sizeof(buffer))) > 0) text.append(buffer, static_cast<size_t>(n));
  close(fd);
  return text;
}

std::vector<int> ProcessesMatching(const std::string& needle) {
  std::vector<int> pids;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    int pid = std::stoi(name);
    if (pid == getpid()) continue;
    for (const char* name : {"cmdline", "environ"}) {
      if (absl::StrContains(ReadProcFile(entry.path() / name), needle)) {
        pids.push_back(pid);
        break;
      }
    }
  }
  return pids;
}

std::vector<std::string> LeftoverCgroups() {
  std::vector<std::string> found;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(
           "/sys/fs/cgroup", std::filesystem::directory_options::skip_permission_denied, ec);
       it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    if (it.depth() > 6) it.disable_recursion_pending();
    std::string name = it->path().filename().string();
    if (!it->is_directory(ec) || !absl::StartsWith(name, "zygo-")) continue;
    int owner = atoi(name.c_str() + 5);
    if (owner <= 0 || kill(owner, 0) != 0) found.push_back(it->path());
  }
  return found;
}

std::vector<std::string> LeftoverMounts() {
  std::vector<std::string> found;
  std::ifstream mountinfo("/proc/self/mountinfo");
  std::string line;
  while (std::getline(mountinfo, line)) {
    std::istringstream fields(line);
    std::string id, parent, dev, root, mountpoint;
    fields >> id >> parent >> dev >> root >> mountpoint;
    if (absl::StrContains(mountpoint, "zygo")) found.push_back(mountpoint);
  }
  return found;
}

absl::StatusOr<RunOptions> RootlessRunOptions(const std::vector<std::string>& helpers,
                                              std::string* dir) {
  constexpr char kUser[] = "zygo-rootless";
  if (getpwnam(kUser) == nullptr &&
      system("/usr/sbin/useradd --system --no-create-home --shell /usr/sbin/nologin "
             "zygo-rootless") != 0) {
    return absl::InternalError("useradd zygo-rootless failed");
  }
  struct passwd* user = getpwnam(kUser);
  if (user == nullptr) return absl::InternalError("no zygo-rootless user");
  std::string made = "/tmp/zygo-rootless-XXXXXX";
  if (mkdtemp(made.data()) == nullptr) return absl::InternalError("mkdtemp failed");
  chmod(made.c_str(), 0755);
  std::vector<std::string> copies = {ZygoPath()};
  for (const std::string& helper : helpers) copies.push_back(Runfile(helper));
  for (const std::string& from : copies) {
    const std::string to = absl::StrCat(made, "/", std::filesystem::path(from).filename().string());
    std::filesystem::copy_file(from, to);
    chmod(to.c_str(), 0755);
  }
  *dir = made;
  RunOptions options;
  options.as_uid = static_cast<int>(user->pw_uid);
  options.as_gid = static_cast<int>(user->pw_gid);
  options.zygo_binary = made + "/zygo";
  options.want_outcome = false;
  return options;
}

}  // namespace zygo::testing
