// SealForkedZygote against real processes. The test stands for the supervisor and builds a
// runtime sandbox of its own: a user namespace R and a pid namespace whose pid 1 (the
// runtime) lives in a private tmpfs root (/code, /tmp, /proc with a mask and read-only
// /proc/sys, /dev/null, /dev/shm) in a mount namespace of its own, so nothing can reach the
// host even if a check fails. The runtime forks a child that unshares as a runtime's agent
// does and forks Z, pid 1 of its own pid namespace; Z waits, the test seals it, and Z
// reports what it sees. As root, and as an ordinary user owning R.
#include "core/forked_zygote.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "core/base/sys/mount_api.h"
#include "core/base/sys/process.h"
#include "core/base/unique_fd.h"
#include "core/mount_plan.h"
#include "core/userns_limits.h"

namespace zygo::core {
namespace {

using base::UniqueFd;

// What a runtime's agent unshares before it forks the function zygote.
constexpr unsigned long kZygoteNamespaces =
    CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS;
constexpr char kCodeFile[] = "handler.py";
constexpr char kCodeText[] = "print('hello from /code')\n";

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

// Who the runtime's processes are: R maps `uid`/`gid` one to one (and 0 to the test's
// own ids); the runtime's agent forks as them, so Z is them.
struct Ids {
  uint32_t uid = 0;
  uint32_t gid = 0;
};

// ---- Z's side: what it checks once sealed. Each returns "" or "CHECK: what it saw".

struct Before {
  dev_t tmp = 0, shm = 0;
  bool lo_up = false;
};

std::string CheckProc() {
  char self[16] = {};
  if (readlink("/proc/self", self, sizeof(self) - 1) < 0 || std::string(self) != "1") {
    return std::string("pid_one: /proc/self -> ") + self;
  }
  for (const std::string& name : List("/proc")) {
    if (isdigit(name[0]) && name != "1") return "own_pids: /proc lists pid " + name;
  }
  for (const char* path : kMaskedProcPaths) {
    struct stat st;
    if (stat(path, &st) != 0) continue;  // not on this kernel
    const bool masked = S_ISDIR(st.st_mode) ? List(path).empty()
                                            : S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3);
    if (!masked) return std::string("masks: ") + path + " is not masked";
  }
  for (const char* path : {"/proc/keys", "/proc/timer_list"}) {
    if (!ReadFile(path).empty()) return std::string("masks: ") + path + " has bytes";
  }
  // Z still has every capability in its user namespace, so only the mount refuses this.
  const int fd = open("/proc/sys/user/max_user_namespaces", O_WRONLY | O_CLOEXEC);
  if (fd >= 0 || errno != EROFS) {
    return "proc_sys_read_only: open O_WRONLY gave " + std::to_string(fd < 0 ? errno : 0);
  }
  return "";
}

std::string CheckCode() {
  if (ReadFile(std::string("/code/") + kCodeFile) != kCodeText) return "code: not the test's file";
  const int fd = open("/code/new", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd >= 0 || errno != EROFS) return "code_read_only: " + std::to_string(fd < 0 ? errno : 0);
  return "";
}

std::string CheckOwnTmpfs(const char* dir, dev_t before, const Ids& ids) {
  struct stat st;
  if (stat(dir, &st) != 0 || st.st_dev == before) return std::string("own_tmpfs: ") + dir;
  if ((st.st_mode & 07777) != 01777) return std::string("tmpfs_mode: ") + dir;
  if (!List(dir).empty()) return std::string("tmpfs_empty: ") + dir + " holds files";
  const std::string file = std::string(dir) + "/mine";
  if (!(std::ofstream(file) << "mine") || stat(file.c_str(), &st) != 0) {
    return std::string("tmpfs_writable: ") + dir;
  }
  if (st.st_uid != ids.uid || st.st_gid != ids.gid) return "tmpfs_owner: " + file;
  return "";
}

// The limits the test gave F (DefaultUsernsLimits(0)): at most 16 inotify instances and
// no user namespace of its own.
std::string CheckLimits() {
  std::vector<UniqueFd> instances;
  while (instances.size() < 64) {
    UniqueFd fd(inotify_init1(IN_CLOEXEC));
    if (!fd.valid()) break;
    instances.push_back(std::move(fd));
  }
  if (instances.size() != 16 || errno != EMFILE) {
    return "inotify_limit: " + std::to_string(instances.size()) + " instances";
  }
  if (unshare(CLONE_NEWUSER) == 0 || errno != ENOSPC) return "userns_limit";
  return "";
}

std::string CheckSealed(const Before& before, const Ids& ids) {
  for (std::string failed : {CheckProc(), CheckCode(), CheckOwnTmpfs("/tmp", before.tmp, ids),
                             CheckOwnTmpfs("/dev/shm", before.shm, ids)}) {
    if (!failed.empty()) return failed;
  }
  if (before.lo_up || !LoopbackUp()) return "lo_up";
  if (getuid() != ids.uid || getgid() != ids.gid) return "ids: " + std::to_string(getuid());
  const std::string limits = CheckLimits();
  return limits.empty() ? "ok" : limits;
}

// Z: says hello (its pid travels with it), waits for "go", checks, reports.
[[noreturn]] void RunZygote(int channel, const Ids& ids) {
  Before before;
  struct stat st;
  if (stat("/tmp", &st) == 0) before.tmp = st.st_dev;
  if (stat("/dev/shm", &st) == 0) before.shm = st.st_dev;
  before.lo_up = LoopbackUp();
  if (!Send(channel, "hello")) _exit(1);
  std::optional<Message> go = Receive(channel);
  if (!go.has_value()) _exit(0);
  Send(channel, CheckSealed(before, ids));
  _exit(0);
}

// ---- The runtime sandbox.

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

// A request: the flags the forked child unshares, and whether Z forks once more (the
// target then is pid 2 of the new pid namespace).
struct ForkRequest {
  unsigned long flags = kZygoteNamespaces;
  bool second_child = false;
};

// The runtime's forked child: unshares, forks Z (and Z its own child when asked), exits.
[[noreturn]] void RunForkedChild(int channel, const ForkRequest& request, const Ids& ids) {
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
  RunZygote(channel, ids);
}

[[noreturn]] void RunRuntime(int control, const Ids& ids) {
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
      RunForkedChild(ends[1], request, ids);
    }
    close(ends[1]);
    Send(control, "zygote", ends[0]);
    close(ends[0]);
  }
  _exit(0);
}

// A function zygote the runtime forked, waiting to be told to go on.
struct Zygote {
  UniqueFd channel;
  pid_t pid = 0;
  UniqueFd pidfd;

  // Lets it check what it sees; its report.
  std::string Go() {
    if (!Send(channel.get(), "go")) return "(gone)";
    std::optional<Message> report = Receive(channel.get());
    return report.has_value() ? report->bytes : "(no report)";
  }
};

class Runtime {
 public:
  // Starts R's first process and, inside, the runtime. `error()` says why it could not.
  explicit Runtime(const Ids& ids) {
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
      if (runtime == 0) RunRuntime(control[1], ids);
      int status = 0;
      waitpid(runtime, &status, 0);
      _exit(0);
    }
    close(control[1]);
    close(mapped[0]);
    control_ = UniqueFd(control[0]);
    UniqueFd go_on(mapped[1]);
    if (!Receive(control_.get()).has_value() || !WriteMaps(ids) ||
        write(go_on.get(), "m", 1) != 1) {
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

  ~Runtime() {
    control_.Reset();  // the runtime exits, and every process of its pid namespace with it
    if (runtime_pidfd_.valid()) base::sys::RawPidfdSendSignal(runtime_pidfd_.get(), SIGKILL);
    if (init_ > 0) waitpid(init_, nullptr, 0);
  }

  const std::string& error() const { return error_; }

  std::optional<Zygote> Fork(const ForkRequest& request = {}) {
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

  ForkedZygoteTarget Target(const Zygote& zygote) const {
    return {runtime_, runtime_pidfd_.get(), zygote.pid, zygote.pidfd.get()};
  }

  // The runtime's (R's) mount table.
  std::string Mounts() const {
    return ReadFile("/proc/" + std::to_string(runtime_) + "/mountinfo");
  }

 private:
  // R maps 0 to the test's own ids and, as root, `ids` one to one.
  bool WriteMaps(const Ids& ids) const {
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

  pid_t init_ = -1;
  pid_t runtime_ = -1;
  UniqueFd control_, runtime_pidfd_;
  std::string error_;
};

// The function's code, in a directory of its own under the host's /tmp that any user can
// reach (the ordinary-user case).
class CodeDir {
 public:
  CodeDir() {
    char base[] = "/tmp/zygo-forked-zygote-test.XXXXXX";
    if (mkdtemp(base) == nullptr) return;
    base_ = base;
    chmod(base_.c_str(), 0755);
    path_ = base_ + "/code";
    mkdir(path_.c_str(), 0755);
    std::ofstream(path_ + "/" + kCodeFile) << kCodeText;
  }
  ~CodeDir() {
    for (const std::string& dir : {path_, base_ + "/moved"}) {
      for (const std::string& name : List(dir.c_str())) unlink((dir + "/" + name).c_str());
    }
    unlink(path_.c_str());
    rmdir(path_.c_str());
    rmdir((base_ + "/moved").c_str());
    rmdir(base_.c_str());
  }
  const std::string& path() const { return path_; }
  const std::string& base() const { return base_; }

  ForkedZygoteOptions Options(const Ids& ids) const {
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

 private:
  std::string base_, path_;
};

// Nothing mounted on the host under the test's directory, nor over the places Z gets.
std::string HostMounts(const std::string& under) {
  std::string found;
  std::istringstream table(ReadFile("/proc/self/mountinfo"));
  for (std::string line; std::getline(table, line);) {
    if (line.find(" " + under) != std::string::npos) found += line + "\n";
  }
  for (const char* place : {"/proc", "/tmp", "/dev/shm"}) {
    struct stat st;
    stat(place, &st);
    found += std::string(place) + " " + std::to_string(st.st_dev) + "\n";
  }
  return found;
}

// The whole positive case, for the tests and for an ordinary user's child: "ok", or what
// went wrong first.
std::string SealAndCheck(const Ids& ids) {
  CodeDir code;
  const std::string host_before = HostMounts(code.base());
  Runtime runtime(ids);
  if (!runtime.error().empty()) return runtime.error();
  std::optional<Zygote> zygote = runtime.Fork();
  if (!zygote.has_value()) return "the runtime did not fork a zygote";
  const std::string runtime_before = runtime.Mounts();
  const absl::Status sealed = SealForkedZygote(runtime.Target(*zygote), code.Options(ids));
  if (!sealed.ok()) return sealed.ToString();
  if (runtime.Mounts() != runtime_before) return "R's mount table changed";
  if (HostMounts(code.base()) != host_before) return "the host's mount table changed";
  return zygote->Go();
}

class ForkedZygoteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (it makes user namespaces with many ids)";
  }
  const Ids ids_{1000, 1000};
};

TEST_F(ForkedZygoteTest, SealsAZygoteInItsOwnNamespaces) {
  // Controls on the host: a masked file has bytes, and /proc/sys opens for writing (for
  // nothing to be written).
  EXPECT_FALSE(ReadFile("/proc/timer_list").empty());
  EXPECT_TRUE(UniqueFd(open("/proc/sys/kernel/hostname", O_WRONLY | O_CLOEXEC)).valid());
  EXPECT_EQ(SealAndCheck(ids_), "ok");
}

TEST_F(ForkedZygoteTest, AsAnOrdinaryUserOwningR) {
  int result[2];
  ASSERT_EQ(pipe2(result, O_CLOEXEC), 0);
  const pid_t child = fork();
  if (child == 0) {
    std::string report = "could not become nobody";
    // Dumpable again after the uid change, as a program nobody started is, or its
    // children's /proc files (uid_map) stay root's.
    if (setgroups(0, nullptr) == 0 && setresgid(65534, 65534, 65534) == 0 &&
        setresuid(65534, 65534, 65534) == 0 && prctl(PR_SET_DUMPABLE, 1) == 0) {
      report = SealAndCheck({0, 0});
    }
    (void)!write(result[1], report.data(), report.size());
    _exit(0);
  }
  close(result[1]);
  char buffer[4096];
  std::string report;
  for (ssize_t n; (n = read(result[0], buffer, sizeof(buffer))) > 0;) report.append(buffer, n);
  close(result[0]);
  waitpid(child, nullptr, 0);
  EXPECT_EQ(report, "ok");
}

TEST_F(ForkedZygoteTest, AZygoteThatKeptTheRuntimesMountNamespaceIsRefused) {
  CodeDir code;
  Runtime runtime(ids_);
  ASSERT_EQ(runtime.error(), "");
  std::optional<Zygote> shared = runtime.Fork({kZygoteNamespaces & ~CLONE_NEWNS});
  ASSERT_TRUE(shared.has_value());
  const std::string before = runtime.Mounts();
  const absl::Status sealed = SealForkedZygote(runtime.Target(*shared), code.Options(ids_));
  EXPECT_EQ(sealed.code(), absl::StatusCode::kFailedPrecondition) << sealed;
  EXPECT_NE(sealed.message().find("mount namespace"), std::string::npos) << sealed;
  EXPECT_EQ(runtime.Mounts(), before) << "something was mounted in R's mount namespace";
  EXPECT_EQ(ReadFile("/proc/" + std::to_string(shared->pid) + "/uid_map"), "");
  // Control: the same runtime's zygote in a mount namespace of its own.
  std::optional<Zygote> own = runtime.Fork();
  ASSERT_TRUE(own.has_value());
  const absl::Status control = SealForkedZygote(runtime.Target(*own), code.Options(ids_));
  ASSERT_TRUE(control.ok()) << control;
  EXPECT_EQ(own->Go(), "ok");
  EXPECT_EQ(runtime.Mounts(), before);
}

TEST_F(ForkedZygoteTest, AZygoteThatIsNotPidOneIsRefused) {
  CodeDir code;
  Runtime runtime(ids_);
  ASSERT_EQ(runtime.error(), "");
  ForkRequest second;
  second.second_child = true;
  std::optional<Zygote> pid_two = runtime.Fork(second);
  ASSERT_TRUE(pid_two.has_value());
  const absl::Status sealed = SealForkedZygote(runtime.Target(*pid_two), code.Options(ids_));
  EXPECT_EQ(sealed.code(), absl::StatusCode::kFailedPrecondition) << sealed;
  EXPECT_NE(sealed.message().find("pid 2"), std::string::npos) << sealed;
  // Control: pid 1 of the same kind of namespaces.
  std::optional<Zygote> pid_one = runtime.Fork();
  ASSERT_TRUE(pid_one.has_value());
  const absl::Status control = SealForkedZygote(runtime.Target(*pid_one), code.Options(ids_));
  ASSERT_TRUE(control.ok()) << control;
  EXPECT_EQ(pid_one->Go(), "ok");
}

TEST_F(ForkedZygoteTest, ACodeDirSwappedAfterItWasCheckedIsRefused) {
  CodeDir code;
  Runtime runtime(ids_);
  ASSERT_EQ(runtime.error(), "");
  std::optional<Zygote> zygote = runtime.Fork();
  ASSERT_TRUE(zygote.has_value());
  const ForkedZygoteOptions checked = code.Options(ids_);
  const std::string before = runtime.Mounts();
  // Swapped for another directory: same path, another inode.
  const std::string moved = code.base() + "/moved";
  ASSERT_EQ(rename(code.path().c_str(), moved.c_str()), 0);
  ASSERT_EQ(mkdir(code.path().c_str(), 0755), 0);
  std::ofstream(code.path() + "/" + kCodeFile) << kCodeText;
  absl::Status sealed = SealForkedZygote(runtime.Target(*zygote), checked);
  EXPECT_EQ(sealed.code(), absl::StatusCode::kFailedPrecondition) << sealed;
  // Swapped for a symlink to the directory that was checked.
  ASSERT_EQ(unlink((code.path() + "/" + kCodeFile).c_str()), 0);
  ASSERT_EQ(rmdir(code.path().c_str()), 0);
  ASSERT_EQ(symlink(moved.c_str(), code.path().c_str()), 0);
  sealed = SealForkedZygote(runtime.Target(*zygote), checked);
  EXPECT_EQ(sealed.code(), absl::StatusCode::kFailedPrecondition) << sealed;
  // Refused before anything was written or mounted: the same zygote is sealed once the
  // directory is back.
  EXPECT_EQ(ReadFile("/proc/" + std::to_string(zygote->pid) + "/uid_map"), "");
  EXPECT_EQ(runtime.Mounts(), before);
  ASSERT_EQ(unlink(code.path().c_str()), 0);
  ASSERT_EQ(rename(moved.c_str(), code.path().c_str()), 0);
  const absl::Status control = SealForkedZygote(runtime.Target(*zygote), checked);
  ASSERT_TRUE(control.ok()) << control;
  EXPECT_EQ(zygote->Go(), "ok");
}

TEST_F(ForkedZygoteTest, AZygoteThatIsGoneIsRefused) {
  CodeDir code;
  Runtime runtime(ids_);
  ASSERT_EQ(runtime.error(), "");
  std::optional<Zygote> gone = runtime.Fork();
  ASSERT_TRUE(gone.has_value());
  ASSERT_EQ(base::sys::RawPidfdSendSignal(gone->pidfd.get(), SIGKILL), 0);
  pollfd exited = {gone->pidfd.get(), POLLIN, 0};
  ASSERT_EQ(poll(&exited, 1, 5000), 1);
  const absl::Status sealed = SealForkedZygote(runtime.Target(*gone), code.Options(ids_));
  EXPECT_EQ(sealed.code(), absl::StatusCode::kFailedPrecondition) << sealed;
  // Control: a live one.
  std::optional<Zygote> live = runtime.Fork();
  ASSERT_TRUE(live.has_value());
  const absl::Status control = SealForkedZygote(runtime.Target(*live), code.Options(ids_));
  ASSERT_TRUE(control.ok()) << control;
  EXPECT_EQ(live->Go(), "ok");
}

}  // namespace
}  // namespace zygo::core
