// Starting, health-checking, driving and stopping a test's or a bench's supervisor.
#include "testing/supervisor_process.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <thread>

#include "absl/strings/str_cat.h"
#include "core/base/errno_status.h"
#include "core/base/helper_binary.h"
#include "core/base/status_macros.h"
#include "core/base/sys/remove_tree.h"
#include "core/base/sys/wait_status.h"

extern char** environ;

namespace zygo::testing {
namespace {

constexpr auto kHealthDeadline = std::chrono::seconds(30);

}  // namespace

absl::StatusOr<std::string> FindSupervisorBinary(const std::string& override_path) {
  if (!override_path.empty()) {
    char resolved[PATH_MAX];
    if (access(override_path.c_str(), X_OK) != 0 ||
        realpath(override_path.c_str(), resolved) == nullptr) {
      return base::ErrnoStatus(errno, absl::StrCat("the supervisor ", override_path));
    }
    return std::string(resolved);
  }
  // Installed as zygo-supervisor; in a Bazel tree it is //supervisor's own output.
  absl::StatusOr<std::string> installed =
      base::FindHelperBinary("zygo-supervisor", "supervisor", "the supervisor");
  if (installed.ok()) return installed;
  absl::StatusOr<std::string> built =
      base::FindHelperBinary("supervisor", "supervisor", "the supervisor, `zygo serve`");
  if (built.ok()) return built;
  return absl::NotFoundError(absl::StrCat(
      built.status().message(), "; build it (bazel build //supervisor) or pass --supervisor PATH"));
}

SupervisorProcess::SupervisorProcess(std::string dir, bool owns_dir)
    : dir_(std::move(dir)), owns_dir_(owns_dir), api_(dir_ + "/http.sock") {}

absl::StatusOr<std::unique_ptr<SupervisorProcess>> SupervisorProcess::Start(
    const Options& options) {
  ZYGO_ASSIGN_OR_RETURN(std::string binary, FindSupervisorBinary(options.binary));
  std::string dir = options.dir;
  if (dir.empty()) {
    char pattern[] = "/tmp/zygo-supervisor-XXXXXX";
    if (mkdtemp(pattern) == nullptr) return base::ErrnoStatus(errno, "mkdtemp(/tmp/zygo-*)");
    dir = pattern;
  }
  std::unique_ptr<SupervisorProcess> supervisor(
      new SupervisorProcess(dir, /*owns_dir=*/options.dir.empty()));
  if (supervisor->owns_dir_ && mkdir(supervisor->WorkDir().c_str(), 0755) != 0) {
    return base::ErrnoStatus(errno, absl::StrCat("mkdir(", supervisor->WorkDir(), ")"));
  }
  ZYGO_RETURN_IF_ERROR(supervisor->Spawn(options, binary));
  ZYGO_RETURN_IF_ERROR(supervisor->WaitHealthy());
  return supervisor;
}

absl::Status SupervisorProcess::Spawn(const Options& options, const std::string& binary) {
  std::vector<std::string> args;
  if (!options.wrapper.empty()) args.push_back(options.wrapper);
  args.insert(args.end(), {binary, "--listen", http_socket(), "--grpc-listen", grpc_socket(),
                           "--state-dir", dir_ + "/state", "--no-demo"});
  args.insert(args.end(), options.args.begin(), options.args.end());
  std::vector<char*> argv, envp;
  for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  for (const std::string& var : options.env) envp.push_back(const_cast<char*>(var.c_str()));
  argv.push_back(nullptr);
  envp.push_back(nullptr);
  char* const* env = options.env.empty() ? environ : envp.data();
  base::UniqueFd no_input(open("/dev/null", O_RDONLY | O_CLOEXEC));
  base::UniqueFd log(open((dir_ + "/log").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!no_input.valid() || !log.valid()) return base::ErrnoStatus(errno, "open its stdio");
  const int netns_fd = options.netns_fd;
  const struct rlimit open_files = {options.open_files_soft, options.open_files_hard};
  const pid_t parent = getpid();
  pid_ = fork();
  if (pid_ < 0) return base::ErrnoStatus(errno, "fork");
  if (pid_ == 0) {
    // Async-signal-safe only: the owner has threads (fake DNS servers, gtest's).
    // SIGTERM, not SIGKILL: a supervisor whose owner died still removes its cgroups.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(126);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    signal(SIGPIPE, SIG_DFL);
    if (dup2(no_input.get(), 0) < 0 || dup2(log.get(), 1) < 0 || dup2(log.get(), 2) < 0) {
      _exit(126);
    }
    if (netns_fd >= 0 && setns(netns_fd, CLONE_NEWNET) != 0) _exit(126);
    if (open_files.rlim_max != 0 && setrlimit(RLIMIT_NOFILE, &open_files) != 0) _exit(126);
    execve(argv[0], argv.data(), env);
    _exit(127);
  }
  return absl::OkStatus();
}

absl::Status SupervisorProcess::WaitHealthy() {
  const auto deadline = std::chrono::steady_clock::now() + kHealthDeadline;
  absl::Status last = absl::UnavailableError("no answer");
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return absl::UnavailableError(absl::StrCat("the supervisor ",
                                                 base::sys::DescribeWaitStatus(status),
                                                 " before it was healthy; its log:\n", LogTail()));
    }
    last = api_.Call({"GET", "/v1/health"}).status();
    if (last.ok()) return absl::OkStatus();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return absl::DeadlineExceededError(absl::StrCat("the supervisor did not answer within 30 s (",
                                                  last.message(), "); its log:\n", LogTail()));
}

SupervisorProcess::~SupervisorProcess() {
  if (absl::Status stopped = Stop(); !stopped.ok()) {
    fprintf(stderr, "stopping the supervisor: %s\n", std::string(stopped.message()).c_str());
  }
  if (!owns_dir_) return;
  if (absl::Status removed = base::sys::RemoveTree(dir_); !removed.ok()) {
    fprintf(stderr, "%s\n", std::string(removed.message()).c_str());
  }
}

// Never kill(-1, ...) or kill(0, ...): pid_ is checked first.
void SupervisorProcess::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

absl::Status SupervisorProcess::Stop(std::chrono::seconds grace) {
  if (pid_ <= 0) return absl::OkStatus();
  kill(pid_, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return absl::OkStatus();
      return absl::InternalError(absl::StrCat("the supervisor ",
                                              base::sys::DescribeWaitStatus(status),
                                              " when stopped; its log:\n", LogTail()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  Kill();
  return absl::DeadlineExceededError(absl::StrCat("the supervisor was still running ",
                                                  grace.count(),
                                                  " s after SIGTERM and was "
                                                  "killed; its log:\n",
                                                  LogTail()));
}

absl::Status SupervisorProcess::Register(const std::string& name, const std::string& spec,
                                         const std::string& base_dir) {
  return api_
      .Call({"POST",
             absl::StrCat("/v1/functions?origin=", name,
                          ".toml&base_dir=", sdk::ApiClient::Escape(base_dir)),
             spec, "application/toml"})
      .status();
}

absl::StatusOr<nlohmann::json> SupervisorProcess::Exec(const std::string& name,
                                                       const nlohmann::json& event) {
  return api_.Call(
      {"POST", absl::StrCat("/v1/functions/", name, "/exec"), event.dump(), "application/json"});
}

std::string SupervisorProcess::State(const std::string& name) {
  absl::StatusOr<nlohmann::json> list = api_.Call({"GET", "/v1/functions"});
  if (!list.ok()) return list.status().ToString();
  for (const nlohmann::json& info : list->value("functions", nlohmann::json::array())) {
    if (info.value("name", "") == name) return info.value("state", "");
  }
  return "missing";
}

std::string SupervisorProcess::Log() const {
  std::ifstream file(dir_ + "/log");
  return std::string((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
}

std::string SupervisorProcess::LogTail(size_t bytes) const {
  std::string log = Log();
  return log.size() > bytes ? log.substr(log.size() - bytes) : log;
}

}  // namespace zygo::testing
