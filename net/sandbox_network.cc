#include "net/sandbox_network.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
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

constexpr char kPidDirPrefix[] = "zygo-pasta-";

// Removes /tmp/zygo-pasta-<pid>-* directories whose zygo-net <pid> is gone: a helper
// killed with SIGKILL cannot remove its own. Only names of this form are touched.
void SweepStalePidDirs() {
  DIR* tmp = opendir("/tmp");
  if (tmp == nullptr) return;
  while (struct dirent* entry = readdir(tmp)) {
    absl::string_view name = entry->d_name;
    if (!absl::ConsumePrefix(&name, kPidDirPrefix)) continue;
    int owner = 0;
    if (!absl::SimpleAtoi(name.substr(0, name.find('-')), &owner) || owner <= 1) continue;
    if (kill(owner, 0) == 0 || errno != ESRCH) continue;
    std::string dir = absl::StrCat("/tmp/", entry->d_name);
    unlink(absl::StrCat(dir, "/pasta.pid").c_str());
    rmdir(dir.c_str());
  }
  closedir(tmp);
}

// A private directory for pasta's pid file, removed with the file in it. Its name carries
// this process's pid so a later helper can sweep it if this one is killed.
class PidFileDir {
 public:
  absl::Status Create() {
    SweepStalePidDirs();
    std::string pattern = absl::StrCat("/tmp/", kPidDirPrefix, getpid(), "-XXXXXX");
    if (mkdtemp(pattern.data()) == nullptr) {
      return base::ErrnoStatus(errno, absl::StrCat("mkdtemp(", pattern, ")"));
    }
    dir_ = pattern;
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
                                   "--foreground",
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

// Starts pasta in the foreground as a child of this process, with stdin/stdout on
// /dev/null and stderr into a pipe (`err_read`), and with PR_SET_PDEATHSIG: pasta dies with
// this helper whatever kills it (a daemonized pasta would outlive a SIGKILLed helper).
absl::StatusOr<pid_t> SpawnPasta(std::vector<std::string> args, UniqueFd* err_read) {
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  int err_pipe[2];
  if (pipe2(err_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return base::ErrnoStatus(errno, "pipe2");
  err_read->Reset(err_pipe[0]);
  UniqueFd err_write(err_pipe[1]);
  pid_t parent = getpid();
  pid_t child = fork();
  if (child < 0) return base::ErrnoStatus(errno, "fork(pasta)");
  if (child == 0) {
    // Async-signal-safe only from here to execve.
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(126);
    int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(null_fd, 1) < 0 ||
        dup2(err_write.get(), 2) < 0) {
      _exit(126);
    }
    // pasta must not inherit blocked signals (SIGTERM stops it), and refuses to start
    // when SIGPIPE is already ignored (it checks signal()'s return).
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    signal(SIGPIPE, SIG_DFL);
    execve(argv[0], argv.data(), environ);
    _exit(127);
  }
  return child;
}

}  // namespace

absl::StatusOr<std::unique_ptr<SandboxNetwork>> SandboxNetwork::StartFromParent(
    pid_t pid, const SandboxNetworkPlan& plan, const std::function<void(pid_t)>& pasta_started) {
  std::unique_ptr<SandboxNetwork> network(new SandboxNetwork());
  std::string netns_path = absl::StrCat("/proc/", pid, "/ns/net");
  network->netns_.Reset(open(netns_path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!network->netns_.valid())
    return base::ErrnoStatus(errno, absl::StrCat("open(", netns_path, ")"));
  ZYGO_RETURN_IF_ERROR(network->InstallFirewallStep(plan));
  ZYGO_RETURN_IF_ERROR(network->StartPastaStep(pid, plan));
  if (pasta_started) pasta_started(network->pasta_pid_);
  ZYGO_RETURN_IF_ERROR(network->StartResolverStep(plan));
  return network;
}

absl::Status SandboxNetwork::CheckFirewallFromParent(pid_t pid) {
  SandboxNetwork network;
  std::string netns_path = absl::StrCat("/proc/", pid, "/ns/net");
  network.netns_.Reset(open(netns_path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!network.netns_.valid())
    return base::ErrnoStatus(errno, absl::StrCat("open(", netns_path, ")"));
  SandboxNetworkPlan plan;
  plan.mode = SandboxNetMode::kEgress;
  ZYGO_RETURN_IF_ERROR(network.InstallFirewallStep(plan));
  // A public address (Cloudflare's resolver) that no refused range holds, for a minute.
  const IpAddress admitted = *IpAddress::Parse("1.1.1.1");
  absl::Status added = AddAllowed(network.netlink_.get(), admitted, 443, 60);
  if (!added.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("--net egress refused: cannot admit a resolved address: ", added.message()));
  }
  return absl::OkStatus();
}

SandboxNetwork::~SandboxNetwork() { Stop(); }

absl::Status SandboxNetwork::InstallFirewallStep(const SandboxNetworkPlan& plan) {
  absl::StatusOr<UniqueFd> netlink = OpenNetlinkInNetns(netns_.get());
  if (!netlink.ok()) {
    // Unimplemented already says "nftables is not available"; anything else (EPERM, say)
    // is named as the socket it was.
    return absl::FailedPreconditionError(absl::StrCat(
        ModeFlag(plan.mode), " refused: ",
        absl::IsUnimplemented(netlink.status()) ? "" : "cannot open the nftables netlink socket: ",
        netlink.status().message(), "; a sandbox never starts unfiltered"));
  }
  netlink_ = *std::move(netlink);
  // pasta runs with --no-map-gw, so no address inside reaches the host through it. Both
  // modes name Zygo's resolver: the sandbox's resolv.conf points at it.
  const IpAddress resolver = *IpAddress::Parse(kResolverAddress);
  absl::StatusOr<FirewallPlan> firewall = plan.mode == SandboxNetMode::kEgress
                                              ? FirewallPlan::Egress(resolver, {})
                                              : FirewallPlan::Full(resolver, {});
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
  ZYGO_ASSIGN_OR_RETURN(pid_t child, SpawnPasta(PastaArgs(pid, plan, pid_dir.path()), &err_read));
  UniqueFd child_fd(base::sys::RawPidfdOpen(child));
  // In the foreground pasta writes its pid file once the namespace is configured.
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(kPastaStartTimeoutMs);
  for (;;) {
    absl::StatusOr<pid_t> written = ReadPidFile(pid_dir.path());
    if (written.ok() && *written == child) break;
    int status = 0;
    pid_t done = waitpid(child, &status, WNOHANG);
    if (done == child || std::chrono::steady_clock::now() > deadline) {
      if (done != child) {
        kill(child, SIGKILL);
        while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
        }
      }
      std::string why = DrainOneLine(err_read.get());
      return absl::FailedPreconditionError(
          absl::StrCat(ModeFlag(plan.mode), " refused: pasta failed to start (",
                       done != child       ? "no answer in 10 s"
                       : WIFEXITED(status) ? absl::StrCat("exit ", WEXITSTATUS(status))
                                           : "killed",
                       why.empty() ? "" : ": ", why, ")"));
    }
    usleep(1000);
  }
  pasta_ = std::move(child_fd);
  pasta_pid_ = child;
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
  if (plan.mode == SandboxNetMode::kEgress) {
    ZYGO_ASSIGN_OR_RETURN(options.allowlist, Allowlist::Parse(plan.allow));
    int netlink = netlink_.get();
    options.admit = [netlink](const IpAddress& ip, uint16_t port, uint32_t ttl) {
      return AddAllowed(netlink, ip, port, ttl);
    };
  } else {
    // Full mode's firewall has no sets to admit into: public addresses are open, and the
    // resolver still drops refused answers (rebinding to the LAN or the host).
    options.names = DnsNamePolicy::kAnyName;
  }
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
    // pasta is this process's child now (it runs in the foreground): reap it.
    while (waitpid(pasta_pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
}

}  // namespace zygo::net
