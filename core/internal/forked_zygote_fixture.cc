#include "core/internal/forked_zygote_fixture.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/mount.h>
#include <net/if.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "core/base/sys/mount_api.h"
#include "core/base/sys/process.h"
#include "core/userns_limits.h"

namespace zygo::core::testing {
namespace {

using base::UniqueFd;

// A message on a unix socket, with the sender's pid as the receiver's namespace sees it
// (SO_PASSCRED) and an fd passed along.
struct Message {
  std::string bytes;
  pid_t pid = 0;
  UniqueFd fd;
};

bool Send(int sock, const std::string& bytes, int fd = -1) {
  iovec iov = {const_cast<char*>(bytes.data()), bytes.size()};
  msghdr msg = {};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  char control[CMSG_SPACE(sizeof(int))] = {};
  if (fd >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cmsg), &fd, sizeof(int));
  }
  return sendmsg(sock, &msg, MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
}

std::optional<Message> Receive(int sock) {
  char buffer[4096];
  iovec iov = {buffer, sizeof(buffer)};
  char control[CMSG_SPACE(sizeof(ucred)) + CMSG_SPACE(sizeof(int))] = {};
  msghdr msg = {};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  const ssize_t n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
  if (n <= 0) return std::nullopt;
  Message message;
  message.bytes.assign(buffer, n);
  for (cmsghdr* cmsg = CMSG_FIRSTHDR(&msg); cmsg != nullptr; cmsg = CMSG_NXTHDR(&msg, cmsg)) {
    if (cmsg->cmsg_type == SCM_CREDENTIALS) {
      ucred cred;
      memcpy(&cred, CMSG_DATA(cmsg), sizeof(cred));
      message.pid = cred.pid;
    } else if (cmsg->cmsg_type == SCM_RIGHTS) {
      int fd;
      memcpy(&fd, CMSG_DATA(cmsg), sizeof(fd));
      message.fd = UniqueFd(fd);
    }
  }
  return message;
}

// A socket pair whose first end receives its peers' pids.
bool CredentialPair(int ends[2]) {
  const int on = 1;
  return socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ends) == 0 &&
         setsockopt(ends[0], SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)) == 0;
}

// Z: says hello (its pid travels with it), waits for "go", checks, reports.
[[noreturn]] void RunZygote(int channel, const Ids& ids, ZygoteCheck check) {
  ZygoteBefore before;
  struct stat st;
  if (stat("/tmp", &st) == 0) before.tmp = st.st_dev;
  if (stat("/dev/shm", &st) == 0) before.shm = st.st_dev;
  before.lo_up = LoopbackUp();
  if (!Send(channel, "hello")) _exit(1);
  std::optional<Message> go = Receive(channel);
  if (!go.has_value()) _exit(0);
  Send(channel, check(before, ids));
  _exit(0);
}

// pid 1 of P_R, in R: a private root, then fork on request.
int BuildPrivateRoot() {
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return 1;
  // Only in this mount namespace, private from here on, as the launch's staging does.
  if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=755,size=1m") != 0) return 2;
  for (const char* dir :
       {"/tmp/code", "/tmp/tmp", "/tmp/proc", "/tmp/dev", "/tmp/dev/shm", "/tmp/oldroot"}) {
    if (mkdir(dir, 0755) != 0) return 3;
  }
  if (!UniqueFd(open("/tmp/dev/null", O_WRONLY | O_CREAT | O_CLOEXEC, 0644)).valid() ||
      mount("/dev/null", "/tmp/dev/null", nullptr, MS_BIND, nullptr) != 0) {
    return 4;
  }
  if (mount("tmpfs", "/tmp/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=1m") != 0 ||
      mount("tmpfs", "/tmp/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=1m") != 0) {
    return 5;
  }
  // The runtime's own /proc, masked as the launch masks it: the locked overmounts that
  // make the kernel refuse a new proc inside Z's copy of this namespace.
  if (mount("proc", "/tmp/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0 ||
      mount("/tmp/dev/null", "/tmp/proc/keys", nullptr, MS_BIND, nullptr) != 0 ||
      mount("/tmp/proc/sys", "/tmp/proc/sys", nullptr, MS_BIND | MS_REC, nullptr) != 0 ||
      base::sys::RawMountSetattr("/tmp/proc/sys", true, MOUNT_ATTR_RDONLY, 0) != 0) {
    return 6;
  }
  if (chdir("/tmp") != 0 || base::sys::RawPivotRoot(".", "oldroot") != 0 || chdir("/") != 0 ||
      umount2("/oldroot", MNT_DETACH) != 0 || rmdir("/oldroot") != 0) {
    return 7;
  }
  // What Z must not see once it has its own.
  if (!(std::ofstream("/tmp/runtime-file") << "runtime") ||
      !(std::ofstream("/dev/shm/runtime-file") << "runtime")) {
    return 8;
  }
  return base::sys::RawMountSetattr("/", false, MOUNT_ATTR_RDONLY, 0) == 0 ? 0 : 9;
}

// The runtime's forked child: unshares, forks Z (and Z its own child when asked), exits.
[[noreturn]] void RunForkedChild(int channel, const ForkRequest& request, const Ids& ids,
                                 ZygoteCheck check) {
  const bool become = ids.uid != 0 || ids.gid != 0;
  if ((become && (setgroups(0, nullptr) != 0 || setresgid(ids.gid, ids.gid, ids.gid) != 0 ||
                  setresuid(ids.uid, ids.uid, ids.uid) != 0)) ||
      unshare(request.flags) != 0) {
    _exit(1);
  }
  const pid_t zygote = fork();
  if (zygote != 0) _exit(zygote > 0 ? 0 : 1);
  if (request.second_child) {
    if (fork() != 0) {  // pid 1 stays, and dies with the runtime
      for (;;) pause();
    }
  }
  RunZygote(channel, ids, check);
}

[[noreturn]] void RunRuntime(int control, const Ids& ids, ZygoteCheck check) {
  signal(SIGCHLD, SIG_IGN);  // pid 1: its orphans are reaped for it
  const int built = BuildPrivateRoot();
  if (!Send(control, "ready " + std::to_string(built))) _exit(1);
  while (std::optional<Message> message = Receive(control)) {
    ForkRequest request;
    memcpy(&request, message->bytes.data(), std::min(message->bytes.size(), sizeof(request)));
    int ends[2];
    if (!CredentialPair(ends)) _exit(2);
    if (fork() == 0) {
      close(ends[0]);
      RunForkedChild(ends[1], request, ids, check);
    }
    close(ends[1]);
    Send(control, "zygote", ends[0]);
    close(ends[0]);
  }
  _exit(0);
}

}  // namespace

std::string Zygote::Go() {
  if (!Send(channel.get(), "go")) return "(gone)";
  std::optional<Message> report = Receive(channel.get());
  return report.has_value() ? report->bytes : "(no report)";
}

Runtime::Runtime(const Ids& ids, ZygoteCheck check) {
  int control[2], mapped[2];
  if (!CredentialPair(control) || pipe2(mapped, O_CLOEXEC) != 0) {
    error_ = "socketpair";
    return;
  }
  init_ = fork();
  if (init_ == 0) {
    close(control[0]);
    close(mapped[1]);
    char byte;
    if (unshare(CLONE_NEWUSER) != 0 || !Send(control[1], "unshared") ||
        read(mapped[0], &byte, 1) != 1 || unshare(CLONE_NEWNS | CLONE_NEWPID) != 0) {
      _exit(1);
    }
    const pid_t runtime = fork();
    if (runtime == 0) RunRuntime(control[1], ids, check);
    int status = 0;
    waitpid(runtime, &status, 0);
    _exit(0);
  }
  close(control[1]);
  close(mapped[0]);
  control_ = UniqueFd(control[0]);
  UniqueFd go_on(mapped[1]);
  if (!Receive(control_.get()).has_value() || !WriteMaps(ids) || write(go_on.get(), "m", 1) != 1) {
    error_ = "R could not be made and mapped";
    return;
  }
  std::optional<Message> ready = Receive(control_.get());
  if (!ready.has_value() || ready->bytes != "ready 0") {
    error_ = "the runtime's private root: " + (ready.has_value() ? ready->bytes : "(none)");
    return;
  }
  runtime_ = ready->pid;
  runtime_pidfd_ = UniqueFd(base::sys::RawPidfdOpen(runtime_));
}

Runtime::~Runtime() {
  control_.Reset();  // the runtime exits, and every process of its pid namespace with it
  if (runtime_pidfd_.valid()) base::sys::RawPidfdSendSignal(runtime_pidfd_.get(), SIGKILL);
  if (init_ > 0) waitpid(init_, nullptr, 0);
}

std::optional<Zygote> Runtime::Fork(const ForkRequest& request) {
  std::string bytes(reinterpret_cast<const char*>(&request), sizeof(request));
  if (!Send(control_.get(), bytes)) return std::nullopt;
  std::optional<Message> reply = Receive(control_.get());
  if (!reply.has_value() || !reply->fd.valid()) return std::nullopt;
  Zygote zygote;
  zygote.channel = std::move(reply->fd);
  std::optional<Message> hello = Receive(zygote.channel.get());
  if (!hello.has_value() || hello->pid <= 0) return std::nullopt;
  zygote.pid = hello->pid;
  zygote.pidfd = UniqueFd(base::sys::RawPidfdOpen(zygote.pid));
  if (!zygote.pidfd.valid()) return std::nullopt;
  return zygote;
}

ForkedZygoteTarget Runtime::Target(const Zygote& zygote) const {
  return {runtime_, runtime_pidfd_.get(), zygote.pid, zygote.pidfd.get()};
}

std::string Runtime::Mounts() const {
  return ReadFile("/proc/" + std::to_string(runtime_) + "/mountinfo");
}

// R maps 0 to the test's own ids and, as root, `ids` one to one.
bool Runtime::WriteMaps(const Ids& ids) const {
  const std::string proc = "/proc/" + std::to_string(init_) + "/";
  std::string uid_map = "0 " + std::to_string(geteuid()) + " 1\n";
  std::string gid_map = "0 " + std::to_string(getegid()) + " 1\n";
  if (geteuid() == 0 && ids.uid != 0) {
    uid_map += std::to_string(ids.uid) + " " + std::to_string(ids.uid) + " 1\n";
    gid_map += std::to_string(ids.gid) + " " + std::to_string(ids.gid) + " 1\n";
  }
  const bool groups =
      geteuid() == 0 || static_cast<bool>(std::ofstream(proc + "setgroups") << "deny");
  return groups && static_cast<bool>(std::ofstream(proc + "uid_map") << uid_map) &&
         static_cast<bool>(std::ofstream(proc + "gid_map") << gid_map);
}

CodeDir::CodeDir() {
  char base[] = "/tmp/zygo-forked-zygote-test.XXXXXX";
  if (mkdtemp(base) == nullptr) return;
  base_ = base;
  chmod(base_.c_str(), 0755);
  path_ = base_ + "/code";
  mkdir(path_.c_str(), 0755);
  std::ofstream(path_ + "/" + kCodeFile) << kCodeText;
}

CodeDir::~CodeDir() {
  for (const std::string& dir : {path_, base_ + "/moved"}) {
    for (const std::string& name : List(dir.c_str())) unlink((dir + "/" + name).c_str());
  }
  unlink(path_.c_str());
  rmdir(path_.c_str());
  rmdir((base_ + "/moved").c_str());
  rmdir(base_.c_str());
}

ForkedZygoteOptions CodeDir::Options(const Ids& ids) const {
  ForkedZygoteOptions options;
  options.code_dir = path_;
  struct stat st;
  if (stat(path_.c_str(), &st) == 0) {
    options.code_dev = st.st_dev;
    options.code_ino = st.st_ino;
  }
  options.tmp_bytes = 1 << 20;
  options.shm_bytes = 1 << 20;
  options.gid = ids.gid;
  options.userns_limits = DefaultUsernsLimits(0);
  return options;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Entries of a directory but "." and "..".
std::vector<std::string> List(const char* path) {
  std::vector<std::string> names;
  if (DIR* dir = opendir(path)) {
    while (const dirent* entry = readdir(dir)) {
      const std::string name = entry->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    closedir(dir);
  }
  return names;
}

bool LoopbackUp() {
  UniqueFd sock(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  ifreq request = {};
  strncpy(request.ifr_name, "lo", IFNAMSIZ - 1);
  return ioctl(sock.get(), SIOCGIFFLAGS, &request) == 0 && (request.ifr_flags & IFF_UP) != 0;
}

// A message on a unix socket, with the sender's pid as the receiver's namespace sees it
// (SO_PASSCRED) and an fd passed along.

}  // namespace zygo::core::testing
