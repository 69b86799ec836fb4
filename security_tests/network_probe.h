// The probe the one-shot network escape tests run inside a sandbox with /usr/bin/python3:
// it resolves and connects, one line per target, and the verdicts parsed back.
#ifndef ZYGO_SECURITY_TESTS_NETWORK_PROBE_H_
#define ZYGO_SECURITY_TESTS_NETWORK_PROBE_H_

#include <map>
#include <string>

#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace zygo::testing {

// Targets and their lines:
//   HOST:PORT     "connected|timeout|refused|unreachable|nxdomain|noaddr|error ERRNO"
//   dns@SERVER    a question for allowed.test straight to SERVER: "answered|timeout|error ERRNO"
//   udp@HOST:PORT a datagram (HOST resolved first): "sent|noaddr|error ERRNO"
//   ping@ADDR     an ICMP echo from a ping socket, raw@ADDR from a raw one: "sent|error ERRNO"
//   interfaces    the interface names, comma-separated
//   uidmap        /proc/self/uid_map on one line (who the sandbox's root is on the host)
//   resolv        the nameservers of the sandbox's /etc/resolv.conf, comma-separated
inline constexpr char kNetworkProbe[] = R"(
import socket, struct, sys
for target in sys.argv[1:]:
    if target.startswith('dns@'):
        server = target[4:]
        q = struct.pack('>HHHHHH', 0x1234, 0x0100, 1, 0, 0, 0) + b'\x07allowed\x04test\x00' + struct.pack('>HH', 1, 1)
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.settimeout(1.0)
        try:
            s.sendto(q, (server, 53))
            s.recvfrom(512)
            print(target, 'answered')
        except socket.timeout:
            print(target, 'timeout')
        except OSError as e:
            print(target, 'error', e.errno)
        continue
    if target.split('@')[0] in ('udp', 'ping', 'raw'):
        kind, _, rest = target.partition('@')
        try:
            if kind == 'udp':
                host, port = rest.rsplit(':', 1)
                address = socket.getaddrinfo(host, int(port), socket.AF_INET, socket.SOCK_DGRAM)[0][4]
                with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                    s.sendto(b'zygo', address)
            else:
                kind = socket.SOCK_RAW if kind == 'raw' else socket.SOCK_DGRAM
                with socket.socket(socket.AF_INET, kind, socket.IPPROTO_ICMP) as s:
                    # Echo request, id 1, sequence 1 (a ping socket sets its own id and checksum).
                    s.sendto(bytes([8, 0, 0xf7, 0xfd, 0, 1, 0, 1]), (rest, 0))
            print(target, 'sent')
        except socket.gaierror:
            print(target, 'noaddr')
        except OSError as e:
            print(target, 'error', e.errno)
        continue
    if target == 'interfaces':
        print(target, ','.join(sorted(name for _, name in socket.if_nameindex())))
        continue
    if target == 'resolv':
        with open('/etc/resolv.conf') as f:
            print(target, ','.join(l.split()[1] for l in f if l.startswith('nameserver')))
        continue
    if target == 'uidmap':
        print(target, ' '.join(open('/proc/self/uid_map').read().split()))
        continue
    host, port = target.rsplit(':', 1)
    try:
        infos = socket.getaddrinfo(host, int(port), socket.AF_INET, socket.SOCK_STREAM)
    except socket.gaierror as e:
        print(target, 'nxdomain' if e.errno == socket.EAI_NONAME else 'noaddr')
        continue
    try:
        socket.create_connection(infos[0][4], timeout=1.0).close()
        print(target, 'connected')
    except socket.timeout:
        print(target, 'timeout')
    except ConnectionRefusedError:
        print(target, 'refused')
    except OSError as e:
        print(target, 'unreachable' if e.errno in (101, 113) else 'error %d' % e.errno)
)";

// The probe's output as target -> verdict.
inline std::map<std::string, std::string> ParseProbeVerdicts(absl::string_view out) {
  std::map<std::string, std::string> verdicts;
  for (absl::string_view line : absl::StrSplit(out, '\n', absl::SkipEmpty())) {
    std::pair<std::string, std::string> kv = absl::StrSplit(line, absl::MaxSplits(' ', 1));
    verdicts[kv.first] = kv.second;
  }
  return verdicts;
}

}  // namespace zygo::testing

#endif  // ZYGO_SECURITY_TESTS_NETWORK_PROBE_H_
