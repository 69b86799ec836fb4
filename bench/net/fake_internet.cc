#include "bench/net/fake_internet.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/errno_status.h"
#include "core/base/status_macros.h"
#include "core/base/unique_fd.h"

extern char** environ;

namespace zygo::bench {
namespace {

// The internet's servers, and the machine's idle holder. Both namespaces are held by
// python so the servers need no build of their own; `hold` just sleeps.
constexpr char kHolderScript[] = R"(
import socket, struct, sys, threading, time
if sys.argv[1] == 'hold':
    while True:
        time.sleep(3600)
def dns():
    # On the internet's end of the veth: answers from an address on lo left from the
    # veth's address here (6.18), even from a socket bound to it, and c-ares drops an
    # answer from another source than it asked.
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(('0.0.0.0', 53))
    while True:
        q, peer = s.recvfrom(512)
        if len(q) < 17:
            continue
        i, labels = 12, []
        while i < len(q) and q[i] != 0:
            labels.append(q[i + 1:i + 1 + q[i]].decode('ascii', 'replace').lower())
            i += 1 + q[i]
        if i + 5 > len(q):
            continue
        qtype = struct.unpack('>H', q[i + 1:i + 3])[0]
        r = bytearray(q[:i + 5])
        r[2], r[3] = 0x84 | (q[2] & 1), 0x80
        r[6:12] = bytes(6)
        if '.'.join(labels) != 'bench.test':
            r[3] = 0x83
        elif qtype == 1:
            r[7] = 1
            r += bytes([0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4]) + socket.inet_aton('198.51.100.10')
        s.sendto(bytes(r), peer)
def send(c):
    # The source: an 8-byte big-endian count in, that many zero bytes out, then close.
    try:
        want = b''
        while len(want) < 8:
            got = c.recv(8 - len(want))
            if not got:
                return
            want += got
        left, chunk = struct.unpack('>Q', want)[0], memoryview(bytes(1 << 20))
        while left > 0:
            n = min(left, len(chunk))
            c.sendall(chunk[:n])
            left -= n
    except OSError:
        pass
    finally:
        c.close()
def source():
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(('0.0.0.0', 8081))
    srv.listen(16)
    while True:
        c, _ = srv.accept()
        threading.Thread(target=send, args=(c,), daemon=True).start()
threading.Thread(target=dns, daemon=True).start()
threading.Thread(target=source, daemon=True).start()
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(('0.0.0.0', 8080))
srv.listen(128)
while True:
    c, _ = srv.accept()
    c.close()
)";

std::string NetnsPath(pid_t pid) { return absl::StrCat("/proc/", pid, "/ns/net"); }

std::string NsLink(const std::string& path) {
  char buf[64] = {};
  ssize_t n = readlink(path.c_str(), buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, n) : "";
}

// setpriv --pdeathsig KILL unshare --net python3 -c HOLDER ROLE: one pid throughout (each
// execs the next), and PR_SET_PDEATHSIG survives exec of a non-setuid program.
absl::StatusOr<pid_t> SpawnHolder(const char* role) {
  std::vector<std::string> argv = {"/usr/bin/setpriv",
                                   "--pdeathsig",
                                   "KILL",
                                   "/usr/bin/unshare",
                                   "--net",
                                   "/usr/bin/python3",
                                   "-c",
                                   kHolderScript,
                                   role};
  std::vector<char*> raw;
  for (std::string& arg : argv) raw.push_back(arg.data());
  raw.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  int err = posix_spawn(&pid, raw[0], &actions, nullptr, raw.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0)
    return base::ErrnoStatus(err, absl::StrCat("posix_spawn(", CommandLine({argv}), ")"));
  // The namespace is there once unshare has run; until then the link is ours.
  const std::string own = NsLink("/proc/self/ns/net");
  for (int i = 0; i < 400; ++i) {
    std::string link = NsLink(NetnsPath(pid));
    if (!link.empty() && link != own) return pid;
    if (waitpid(pid, nullptr, WNOHANG) == pid) {
      return absl::InternalError(absl::StrCat("the ", role, " namespace holder exited early"));
    }
    const timespec step = {0, 5'000'000};
    nanosleep(&step, nullptr);
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return absl::DeadlineExceededError(absl::StrCat("no ", role, " network namespace after 2 s"));
}

void Reap(pid_t pid) {
  if (pid <= 0) return;
  kill(pid, SIGKILL);
  while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
}

Command In(pid_t holder, const std::vector<std::string>& argv) {
  Command command{{"/usr/bin/nsenter", absl::StrCat("--net=", NetnsPath(holder)), "--"}};
  command.argv.insert(command.argv.end(), argv.begin(), argv.end());
  return command;
}

absl::Status Ip(pid_t holder, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"/usr/sbin/ip"};
  argv.insert(argv.end(), args.begin(), args.end());
  Command command = In(holder, argv);
  absl::StatusOr<std::string> out = CaptureStdout(command);
  if (!out.ok())
    return absl::InternalError(absl::StrCat(CommandLine(command), ": ", out.status().message()));
  return absl::OkStatus();
}

}  // namespace

const char kMeasureScript[] = R"(
import socket, struct, sys, time
def connect(addr, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(5.0)
    t = time.perf_counter()
    s.connect((addr, port))
    ms = (time.perf_counter() - t) * 1000
    s.close()
    return ms
mode = sys.argv[1]
if mode == 'connect':
    print('connect_ms %.4f' % connect(sys.argv[2], int(sys.argv[3])))
elif mode == 'resolve':
    t = time.perf_counter()
    infos = socket.getaddrinfo(sys.argv[2], int(sys.argv[3]), socket.AF_INET, socket.SOCK_STREAM)
    print('resolve_ms %.4f' % ((time.perf_counter() - t) * 1000))
    print('connect_ms %.4f' % connect(infos[0][4][0], infos[0][4][1]))
elif mode == 'stream':
    # NAME|ADDR PORT BYTES: resolve (egress: through zygo's resolver), connect, then time
    # asking the source for BYTES until the last one is in.
    want = int(sys.argv[4])
    infos = socket.getaddrinfo(sys.argv[2], int(sys.argv[3]), socket.AF_INET, socket.SOCK_STREAM)
    address = infos[0][4]
    s = socket.create_connection(address, timeout=10.0)
    buf = memoryview(bytearray(4 << 20))
    got = 0
    t = time.perf_counter()
    s.sendall(struct.pack('>Q', want))
    while got < want:
        n = s.recv_into(buf)
        if n == 0:
            sys.exit('the source closed after %d of %d bytes' % (got, want))
        got += n
    print('stream_ms %.4f' % ((time.perf_counter() - t) * 1000))
    s.close()
elif mode == 'query':
    host, port = sys.argv[2].rsplit(':', 1)
    name = b''.join(bytes([len(l)]) + l.encode() for l in sys.argv[3].split('.')) + b'\x00'
    q = struct.pack('>HHHHHH', 0x2a2a, 0x0100, 1, 0, 0, 0) + name + struct.pack('>HH', 1, 1)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(5.0)
    t = time.perf_counter()
    s.sendto(q, (host, int(port)))
    r, _ = s.recvfrom(512)
    ms = (time.perf_counter() - t) * 1000
    if len(r) < 4 or r[3] & 0x0f != 0:
        sys.exit('no answer for ' + sys.argv[3])
    print('answer_ms %.4f' % ms)
)";

absl::StatusOr<std::unique_ptr<FakeInternet>> FakeInternet::Start() {
  std::unique_ptr<FakeInternet> net(new FakeInternet());
  ZYGO_ASSIGN_OR_RETURN(net->internet_, SpawnHolder("serve"));
  ZYGO_ASSIGN_OR_RETURN(net->machine_, SpawnHolder("hold"));
  ZYGO_RETURN_IF_ERROR(net->Wire());
  ZYGO_RETURN_IF_ERROR(net->WaitUntilServing());
  return net;
}

FakeInternet::~FakeInternet() {
  Reap(machine_);
  Reap(internet_);
}

absl::Status FakeInternet::Wire() const {
  const std::vector<std::pair<pid_t, std::vector<std::string>>> steps = {
      {internet_, {"link", "set", "lo", "up"}},
      {internet_, {"addr", "add", absl::StrCat(kServerAddress, "/32"), "dev", "lo"}},
      {machine_, {"link", "set", "lo", "up"}},
      {machine_,
       {"link", "add", "vm", "type", "veth", "peer", "name", "vi", "netns",
        absl::StrCat(internet_)}},
      {internet_, {"addr", "add", "203.0.113.1/24", "dev", "vi"}},
      {internet_, {"link", "set", "vi", "up"}},
      {machine_, {"addr", "add", "203.0.113.2/24", "dev", "vm"}},
      {machine_, {"link", "set", "vm", "up"}},
      {machine_, {"route", "add", "default", "via", "203.0.113.1"}},
  };
  for (const auto& [holder, args] : steps) {
    ZYGO_RETURN_IF_ERROR(Ip(holder, args));
  }
  return absl::OkStatus();
}

absl::Status FakeInternet::WaitUntilServing() const {
  // The servers bind as soon as python has started; give them up to 5 s.
  absl::Status last;
  for (int i = 0; i < 100; ++i) {
    last = CaptureStdout(OnMachine({"/usr/bin/python3", "-c", kMeasureScript, "connect",
                                    kServerAddress, absl::StrCat(kServerPort)},
                                   {}))
               .status();
    if (last.ok()) {
      last = CaptureStdout(OnMachine({"/usr/bin/python3", "-c", kMeasureScript, "connect",
                                      kServerAddress, absl::StrCat(kSourcePort)},
                                     {}))
                 .status();
    }
    if (last.ok()) {
      last = CaptureStdout(OnMachine({"/usr/bin/python3", "-c", kMeasureScript, "query",
                                      kDnsUpstream, kBenchName},
                                     {}))
                 .status();
    }
    if (last.ok()) return absl::OkStatus();
    const timespec step = {0, 50'000'000};
    nanosleep(&step, nullptr);
  }
  return absl::DeadlineExceededError(
      absl::StrCat("the fake internet's servers did not answer within 5 s: ", last.message()));
}

absl::Status FakeInternet::InMachine(const std::function<absl::Status()>& start) const {
  base::UniqueFd own(open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
  if (!own.valid()) return base::ErrnoStatus(errno, "open(/proc/thread-self/ns/net)");
  base::UniqueFd machine(open(NetnsPath(machine_).c_str(), O_RDONLY | O_CLOEXEC));
  if (!machine.valid())
    return base::ErrnoStatus(errno, absl::StrCat("open(", NetnsPath(machine_), ")"));
  if (setns(machine.get(), CLONE_NEWNET) != 0) {
    return base::ErrnoStatus(errno, "setns(the machine's network namespace)");
  }
  absl::Status started = start();
  if (setns(own.get(), CLONE_NEWNET) != 0) {
    return base::ErrnoStatus(errno, "setns(back to the bench's network namespace)");
  }
  return started;
}

Command FakeInternet::OnMachine(const std::vector<std::string>& argv,
                                std::vector<std::string> env) const {
  Command command = In(machine_, argv);
  if (!env.empty()) {
    command.inherit_env = false;
    command.env = std::move(env);
  }
  return command;
}

}  // namespace zygo::bench
