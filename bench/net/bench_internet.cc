#include "bench/net/bench_internet.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace zygo::bench {

std::string DnsUpstream() { return absl::StrCat(testing::kDnsServer, ":53"); }

Command OnMachine(const FakeInternet& net, const std::vector<std::string>& argv,
                  std::vector<std::string> env) {
  Command command{
      {"/usr/bin/nsenter", absl::StrCat("--net=/proc/", net.machine().pid(), "/ns/net"), "--"}};
  command.argv.insert(command.argv.end(), argv.begin(), argv.end());
  if (!env.empty()) {
    command.inherit_env = false;
    command.env = std::move(env);
  }
  return command;
}

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

}  // namespace zygo::bench
