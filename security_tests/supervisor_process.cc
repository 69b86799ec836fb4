// Starting, health-checking, driving and stopping a security test's supervisor.
#include "security_tests/supervisor_process.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "security_tests/fake_internet.h"
#include "testing/harness.h"

namespace zygo::testing {

SupervisorProcess::SupervisorProcess(const std::string& dir)
    : dir_(dir), api_(dir + "/http.sock") {}

absl::StatusOr<std::unique_ptr<SupervisorProcess>> SupervisorProcess::Start(
    const Options& options) {
  const std::string& dir = options.dir;
  std::vector<std::string> args;
  if (!options.wrapper.empty()) args.push_back(options.wrapper);
  args.insert(args.end(),
              {Runfile("supervisor/supervisor"), "--listen", dir + "/http.sock", "--grpc-listen",
               dir + "/grpc.sock", "--state-dir", dir + "/state", "--no-demo"});
  args.insert(args.end(), options.args.begin(), options.args.end());
  std::vector<std::string> env = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin",
                                  absl::StrCat("ZYGO_DNS_UPSTREAM=", kDnsServer, ":53")};
  if (!options.marker.empty()) env.push_back(options.marker);
  std::vector<char*> argv, envp;
  for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  for (const std::string& var : env) envp.push_back(const_cast<char*>(var.c_str()));
  argv.push_back(nullptr);
  envp.push_back(nullptr);
  const std::string log = dir + "/log";
  const int netns_fd = options.netns_fd;
  const struct rlimit open_files = {options.open_files_soft, options.open_files_hard};
  const pid_t parent = getpid();
  std::unique_ptr<SupervisorProcess> supervisor(new SupervisorProcess(dir));
  supervisor->pid_ = fork();
  if (supervisor->pid_ < 0) return absl::InternalError(absl::StrCat("fork: ", strerror(errno)));
  if (supervisor->pid_ == 0) {
    // Async-signal-safe only: the tests have threads (the fake DNS servers).
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(126);
    const int out = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0) _exit(126);
    if (netns_fd >= 0 && setns(netns_fd, CLONE_NEWNET) != 0) _exit(126);
    if (open_files.rlim_max != 0 && setrlimit(RLIMIT_NOFILE, &open_files) != 0) _exit(126);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  absl::Status healthy = supervisor->WaitHealthy();
  if (!healthy.ok()) return healthy;
  return supervisor;
}

absl::Status SupervisorProcess::WaitHealthy() {
  // 30 s, by the clock: under qemu TCG (the cgroup-v2 lane) a supervisor that first
  // sweeps a killed one's cgroups takes more than 10 s to answer.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return absl::InternalError(
          absl::StrCat("the supervisor exited (status ", status, "): ", Log()));
    }
    if (api_.Call({"GET", "/v1/health"}).ok()) return absl::OkStatus();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return absl::DeadlineExceededError("the supervisor did not answer within 30 s: " + Log());
}

// Stopped as an operator stops it, so that it removes its cgroups: a SIGKILLed one leaves
// them to the next zygo's sweep, and a test of leftovers run next would see them. Tests of
// a killed supervisor call Kill() themselves. Never kill(-1, ...): Stop checks.
SupervisorProcess::~SupervisorProcess() { Stop(std::chrono::seconds(10)); }

void SupervisorProcess::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

int SupervisorProcess::Stop(std::chrono::seconds grace) {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  int status = -1;
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (std::chrono::steady_clock::now() < deadline) {
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return status;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
  return -1;
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

}  // namespace zygo::testing
