#include "net/sandbox_network.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "core/base/sys/process.h"
#include "net/allowlist.h"
#include "net/firewall.h"
#include "net/firewall_plan.h"
#include "net/netns_socket.h"

extern char** environ;

namespace zygo::net {
namespace {

using base::UniqueFd;

constexpr char kResolverAddress[] = "127.0.0.53";
constexpr int kPastaStartTimeoutMs = 10'000;
constexpr int kPastaStopTimeoutMs = 1'000;

const char* ModeFlag(SandboxNetMode mode) {
  return mode == SandboxNetMode::kEgress ? "--net egress" : "--net full";
}

// Polls a pidfd until the process is gone; false after `timeout_ms`.
bool WaitPidfd(int pidfd, int timeout_ms) {
  struct pollfd fd = {pidfd, POLLIN, 0};
  int n;
  do {
    n = poll(&fd, 1, timeout_ms);
  } while (n < 0 && errno == EINTR);
  return n > 0;
}

// Whatever pasta wrote to its stderr pipe, on one line.
std::string DrainOneLine(int fd) {
  std::string text;
  char buffer[1024];
  ssize_t n;
  while ((n = read(fd, buffer, sizeof(buffer))) > 0) text.append(buffer, static_cast<size_t>(n));
  std::string line(absl::StripAsciiWhitespace(text));
  for (char& c : line) {
    if (c == '\n') c = ' ';
  }
  return line;
}

// A private directory for pasta's pid file, removed with the file in it.
class PidFileDir {
 public:
  absl::Status Create() {
    char dir[] = "/tmp/zygo-pasta-XXXXXX";
    if (mkdtemp(dir) == nullptr) return base::ErrnoStatus(errno, "mkdtemp(/tmp/zygo-pasta-*)");
    dir_ = dir;
    return absl::OkStatus();
  }
  ~PidFileDir() {
    if (dir_.empty()) return;
    unlink(path().c_str());
    rmdir(dir_.c_str());
  }
  std::string path() const { return dir_ + "/pasta.pid"; }

 private:
  std::string dir_;
};

absl::StatusOr<pid_t> ReadPidFile(const std::string& path) {
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  int pid = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &pid) || pid <= 1) {
    return absl::InternalError(absl::StrCat("pasta wrote no pid to ", path));
  }
  return static_cast<pid_t>(pid);
}

// pasta's command line: no port forwarding either way, nothing mapped to the host.
std::vector<std::string> PastaArgs(pid_t pid, const SandboxNetworkPlan& plan,
                                   const std::string& pid_file) {
  std::vector<std::string> args = {plan.pasta_path,
                                   "--config-net",
                                   "-q",
                                   "-t",
                                   "none",
                                   "-u",
                                   "none",
                                   "-T",
                                   "none",
                                   "-U",
                                   "none",
                                   "--no-map-gw",
                                   "--netns",
                                   absl::StrCat("/proc/", pid, "/ns/net"),
                                   "--userns",
                                   absl::StrCat("/proc/", pid, "/ns/user"),
                                   "-P",
                                   pid_file};
  if (geteuid() == 0) {
    args.push_back("--runas");
    args.push_back("0");
  }
  return args;
}

// Spawns `args` with stdin/stdout on /dev/null and stderr into a pipe (`err_read`).
absl::StatusOr<pid_t> SpawnWithStderrPipe(std::vector<std::string> args, UniqueFd* err_read) {
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);

  int err_pipe[2];
  if (pipe2(err_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return base::ErrnoStatus(errno, "pipe2");
  err_read->Reset(err_pipe[0]);
  UniqueFd err_write(err_pipe[1]);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, err_write.get(), 2);
  // pasta must not inherit zygo's blocked signals: SIGTERM stops it.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  // pasta refuses to start when SIGPIPE is already ignored (it checks signal()'s return).
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t child = -1;
  int rc = posix_spawn(&child, argv[0], &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  err_write.Reset();
  if (rc != 0) return base::ErrnoStatus(rc, absl::StrCat("posix_spawn(", args[0], ")"));

  return child;
}

}  // namespace

absl::StatusOr<std::unique_ptr<SandboxNetwork>> SandboxNetwork::StartFromParent(
    pid_t pid, const SandboxNetworkPlan& plan) {
  std::unique_ptr<SandboxNetwork> network(new SandboxNetwork());
  std::string netns_path = absl::StrCat("/proc/", pid, "/ns/net");
  network->netns_.Reset(open(netns_path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!network->netns_.valid())
    return base::ErrnoStatus(errno, absl::StrCat("open(", netns_path, ")"));
  ZYGO_RETURN_IF_ERROR(network->InstallFirewallStep(plan));
  ZYGO_RETURN_IF_ERROR(network->StartPastaStep(pid, plan));
  if (plan.mode == SandboxNetMode::kEgress) {
    ZYGO_RETURN_IF_ERROR(network->StartResolverStep(plan));
  }
  return network;
}

SandboxNetwork::~SandboxNetwork() { Stop(); }

absl::Status SandboxNetwork::InstallFirewallStep(const SandboxNetworkPlan& plan) {
  absl::StatusOr<UniqueFd> netlink = OpenNetlinkInNetns(netns_.get());
  if (!netlink.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat(ModeFlag(plan.mode), " refused: nftables is not available (",
                     netlink.status().message(), "); a sandbox never starts unfiltered"));
  }
  netlink_ = *std::move(netlink);
  // pasta runs with --no-map-gw, so no address inside reaches the host through it.
  absl::StatusOr<FirewallPlan> firewall =
      plan.mode == SandboxNetMode::kEgress
          ? FirewallPlan::Egress(*IpAddress::Parse(kResolverAddress), {})
          : FirewallPlan::Full(std::nullopt, {});
  if (!firewall.ok()) return firewall.status();
  absl::Status installed = InstallFirewall(netlink_.get(), *firewall);
  if (!installed.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        ModeFlag(plan.mode), " refused: cannot install the firewall: ", installed.message()));
  }
  return absl::OkStatus();
}

absl::Status SandboxNetwork::StartPastaStep(pid_t pid, const SandboxNetworkPlan& plan) {
  PidFileDir pid_dir;
  ZYGO_RETURN_IF_ERROR(pid_dir.Create());
  UniqueFd err_read;
  ZYGO_ASSIGN_OR_RETURN(pid_t child,
                        SpawnWithStderrPipe(PastaArgs(pid, plan, pid_dir.path()), &err_read));

  // pasta forks into the background once the namespace is configured; its first process
  // exits 0 then.
  UniqueFd child_fd(base::sys::RawPidfdOpen(child));
  if (child_fd.valid() && !WaitPidfd(child_fd.get(), kPastaStartTimeoutMs)) {
    base::sys::RawPidfdSendSignal(child_fd.get(), SIGKILL);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string why = DrainOneLine(err_read.get());
    return absl::FailedPreconditionError(
        absl::StrCat(ModeFlag(plan.mode), " refused: pasta failed to start (",
                     WIFEXITED(status) ? absl::StrCat("exit ", WEXITSTATUS(status)) : "killed",
                     why.empty() ? "" : ": ", why, ")"));
  }
  ZYGO_ASSIGN_OR_RETURN(pid_t daemon, ReadPidFile(pid_dir.path()));
  int pidfd = base::sys::RawPidfdOpen(daemon);
  if (pidfd < 0) return base::ErrnoStatus(-pidfd, absl::StrCat("pidfd_open(pasta ", daemon, ")"));
  pasta_.Reset(pidfd);
  return absl::OkStatus();
}

absl::Status SandboxNetwork::StartResolverStep(const SandboxNetworkPlan& plan) {
  ZYGO_ASSIGN_OR_RETURN(UniqueFd socket,
                        OpenSocketInNetns(netns_.get(), AF_INET, SOCK_DGRAM, IPPROTO_UDP));
  // lo is still down (the child brings it up after "go"): bind the address it will have.
  int one = 1;
  if (setsockopt(socket.get(), IPPROTO_IP, IP_FREEBIND, &one, sizeof(one)) != 0) {
    return base::ErrnoStatus(errno, "setsockopt(IP_FREEBIND)");
  }
  struct sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_port = htons(53);
  inet_pton(AF_INET, kResolverAddress, &address.sin_addr);
  if (bind(socket.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    return base::ErrnoStatus(errno, "bind(127.0.0.53:53) in the sandbox's network namespace");
  }
  DnsResolverOptions options;
  for (const UpstreamServer& server : plan.upstream) {
    options.upstream.servers.push_back(DnsServer{server.address, server.port});
  }
  ZYGO_ASSIGN_OR_RETURN(options.allowlist, Allowlist::Parse(plan.allow));
  int netlink = netlink_.get();
  options.admit = [netlink](const IpAddress& ip, uint16_t port, uint32_t ttl) {
    return AddAllowed(netlink, ip, port, ttl);
  };
  ZYGO_ASSIGN_OR_RETURN(resolver_, DnsResolver::Create(std::move(socket), std::move(options)));
  return resolver_->Start();
}

void SandboxNetwork::Stop() {
  if (resolver_) resolver_->Stop();
  if (pasta_.valid()) {
    base::sys::RawPidfdSendSignal(pasta_.get(), SIGTERM);
    if (!WaitPidfd(pasta_.get(), kPastaStopTimeoutMs)) {
      base::sys::RawPidfdSendSignal(pasta_.get(), SIGKILL);
      WaitPidfd(pasta_.get(), kPastaStopTimeoutMs);
    }
    pasta_.Reset();
  }
}

}  // namespace zygo::net
