// A warm request calls from a foreign ABI (i386's int 0x80): zygo-init, the seccomp
// filter's listener, kills the request's process, and the reply says so with the call's
// name and ABI, over HTTP and gRPC, Python and warm-exec, as `zygo run` does. The same
// request making the native call is ok (the control), and so is every request after.
#include <filesystem>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "sdk/proto/zygo/v1/zygo.grpc.pb.h"
#include "security_tests/warm_suite.h"
#include "testing/harness.h"

namespace zygo::testing {
namespace {

// getpid through the native ABI, through x32's (the native syscall instruction with the
// x32 bit in the number), or through int 0x80 from machine code of its own:
// mov eax, 20 (i386 getpid); int 0x80; ret.
constexpr char kAbiHandler[] = R"(import ctypes, mmap, os


def main(event):
    if event['call'] == 'native':
        return {'pid': os.getpid()}
    if event['call'] == 'x32':
        return {'pid': ctypes.CDLL(None).syscall(0x40000000 + 39)}
    code = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    code.write(b'\xb8\x14\x00\x00\x00\xcd\x80\xc3')
    address = ctypes.addressof(ctypes.c_char.from_buffer(code))
    return {'pid': ctypes.CFUNCTYPE(ctypes.c_int)(address)()}
)";

// The kernel surfaces `zygo run`'s tests attempt, from a warm request: socket families,
// native AIO, setuid modes, inotify instances, root-only /proc files. Each answer is
// what was attempted: "ok" or the errno's name (for inotify, how many it got).
constexpr char kSurfaceHandler[] = R"(import ctypes, errno, os, socket, tempfile


def _try(action):
    try:
        action()
        return 'ok'
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))


def _aio():
    libc = ctypes.CDLL(None, use_errno=True)
    context = ctypes.c_ulong(0)
    if libc.syscall(206, 16, ctypes.byref(context)) != 0:  # io_setup
        raise OSError(ctypes.get_errno(), 'io_setup')
    libc.syscall(207, context)  # io_destroy


def _inotify_count():
    libc = ctypes.CDLL(None, use_errno=True)
    fds = []
    while len(fds) < 1000:
        fd = libc.inotify_init1(0)
        if fd < 0:
            break
        fds.append(fd)
    for fd in fds:
        os.close(fd)
    return len(fds)


def main(event):
    path = os.path.join(tempfile.gettempdir(), 'setid-probe')  # the request's own dir
    open(path, 'w').close()
    with open('/proc/kpageflags', 'rb') as f:
        kpageflags = len(f.read(4096))
    return {
        'unix': _try(lambda: socket.socket(socket.AF_UNIX).close()),
        'inet': _try(lambda: socket.socket(socket.AF_INET).close()),
        'vsock': _try(lambda: socket.socket(40, socket.SOCK_STREAM).close()),
        'packet': _try(lambda: socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM).close()),
        'aio': _try(_aio),
        'chmod_0755': _try(lambda: os.chmod(path, 0o755)),
        'chmod_4755': _try(lambda: os.chmod(path, 0o4755)),
        'inotify': _inotify_count(),
        'kpageflags_bytes': kpageflags,
    }
)";

// Run with each function in a sandbox of its own, and with the zygote tree.
class WarmSeccompEscape : public WarmSuiteBothLayouts {
 protected:
  void SetUp() override {
    WarmSuiteBothLayouts::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    WriteFile("code/abi.py", kAbiHandler);
    WriteFile("code/surface.py", kSurfaceHandler);
    std::filesystem::copy_file(ProbePath(), dir_ + "/code/escape_probe");
    StartSupervisor();
    if (IsSkipped() || HasFatalFailure()) return;
    absl::Status up = Up("abi", "name = \"abi\"\nentry = \"abi.py:main\"\ncold_after = \"0\"\n");
    ASSERT_TRUE(up.ok()) << up;
    up = Up("surface", "name = \"surface\"\nentry = \"surface.py:main\"\ncold_after = \"0\"\n");
    ASSERT_TRUE(up.ok()) << up;
    // The event (on stdin) picks the probe's subcommand: 80 is int80, 0 write-path /tmp.
    up = Up("abi-exec",
            "name = \"abi-exec\"\nruntime = \"exec\"\ncold_after = \"0\"\n"
            "entry = [\"/bin/sh\", \"-c\", \"read n; if [ $n = 80 ]; then exec /code/escape_probe "
            "int80; fi; exec /code/escape_probe write-path /tmp\"]\n");
    ASSERT_TRUE(up.ok()) << up;
  }

  static void ExpectKilledForInt80(const nlohmann::json& reply) { ExpectKilledFor(reply, "i386"); }

  static void ExpectKilledFor(const nlohmann::json& reply, const std::string& arch) {
    EXPECT_EQ(reply["outcome"]["status"], "seccomp_killed") << reply.dump();
    EXPECT_EQ(reply["outcome"]["exit_code"], 159) << reply.dump();
    EXPECT_EQ(reply["outcome"].value("seccomp_kill", nlohmann::json::object()).value("syscall", ""),
              "getpid")
        << reply.dump();
    EXPECT_EQ(reply["outcome"].value("seccomp_kill", nlohmann::json::object()).value("arch", ""),
              arch)
        << reply.dump();
    EXPECT_EQ(reply["error"]["type"], "seccomp") << reply.dump();
  }
};

// The control every i386 attempt needs: the host itself runs i386 code. A kernel built or
// booted without IA32 emulation (ia32_emulation=0) kills int 0x80 with SIGSEGV before any
// seccomp filter is asked, so there is nothing for a sandbox to refuse.
#define SKIP_UNLESS_THE_HOST_RUNS_I386()                                           \
  do {                                                                             \
    RunResult host = RunProbeOnHost({"int80"});                                    \
    if (Verdict(host, "int80") != "allowed") {                                     \
      GTEST_SKIP() << "this kernel runs no i386 code (int 0x80 on the host: exit " \
                   << host.exit_code << "), so there is no foreign ABI to refuse"; \
    }                                                                              \
  } while (0)

TEST_P(WarmSeccompEscape, APythonRequestCallingFromI386IsKilledAndNamed) {
  SKIP_UNLESS_THE_HOST_RUNS_I386();
  nlohmann::json native = OverHttp("abi", {{"call", "native"}});
  ASSERT_EQ(native["outcome"]["status"], "ok") << native.dump();
  ASSERT_TRUE(native["result"]["pid"].is_number()) << native.dump();
  ExpectKilledForInt80(OverHttp("abi", {{"call", "int80"}}));
  zygo::v1::ExecReply over_grpc = OverGrpc("abi", R"({"call": "int80"})");
  EXPECT_EQ(over_grpc.outcome().status(), "seccomp_killed") << over_grpc.DebugString();
  EXPECT_EQ(over_grpc.outcome().seccomp_syscall(), "getpid") << over_grpc.DebugString();
  EXPECT_EQ(over_grpc.outcome().seccomp_arch(), "i386") << over_grpc.DebugString();
  // The zygote lives on: the next request is served and ok.
  nlohmann::json after = OverHttp("abi", {{"call", "native"}});
  EXPECT_EQ(after["outcome"]["status"], "ok") << after.dump();
}

// x32 calls reach a filter on every x86-64 kernel, IA32 emulation or not. With the zygote
// tree the request is in the function's own pid namespace, and zygo-init, the runtime
// sandbox's, reports it by its pid one namespace up: the reply still names it.
TEST_P(WarmSeccompEscape, APythonRequestCallingThroughX32IsKilledAndNamed) {
  nlohmann::json native = OverHttp("abi", {{"call", "native"}});
  ASSERT_EQ(native["outcome"]["status"], "ok") << native.dump();
  ExpectKilledFor(OverHttp("abi", {{"call", "x32"}}), "x32");
  nlohmann::json after = OverHttp("abi", {{"call", "native"}});
  EXPECT_EQ(after["outcome"]["status"], "ok") << after.dump();
}

TEST_P(WarmSeccompEscape, AWarmExecRequestCallingFromI386IsKilledAndNamed) {
  SKIP_UNLESS_THE_HOST_RUNS_I386();
  nlohmann::json native = OverHttp("abi-exec", 0);
  ASSERT_EQ(native["outcome"]["status"], "ok") << native.dump();
  ExpectKilledForInt80(OverHttp("abi-exec", 80));
  zygo::v1::ExecReply over_grpc = OverGrpc("abi-exec", "80");
  EXPECT_EQ(over_grpc.outcome().status(), "seccomp_killed") << over_grpc.DebugString();
  EXPECT_EQ(over_grpc.outcome().seccomp_arch(), "i386") << over_grpc.DebugString();
}

// The same refusals as a one-shot run's (syscall_escape_test, privilege_escape_test,
// host_resource_escape_test, where the controls on the host are), beside what still works.
TEST_P(WarmSeccompEscape, ARequestMeetsTheSameKernelSurfacesAsAOneShotRun) {
  nlohmann::json reply = OverHttp("surface", nlohmann::json::object());
  ASSERT_EQ(reply["outcome"]["status"], "ok") << reply.dump();
  const nlohmann::json& got = reply["result"];
  EXPECT_EQ(got["unix"], "ok") << got;
  EXPECT_EQ(got["inet"], "ok") << got;
  EXPECT_EQ(got["chmod_0755"], "ok") << got;
  EXPECT_EQ(got["vsock"], "EPERM") << got;
  EXPECT_EQ(got["packet"], "EPERM") << got;
  EXPECT_EQ(got["aio"], "ENOSYS") << got;
  EXPECT_EQ(got["chmod_4755"], "EPERM") << got;
  EXPECT_GT(got["inotify"].get<int>(), 0) << got;
  EXPECT_LE(got["inotify"].get<int>(), 16) << got;
  EXPECT_EQ(got["kpageflags_bytes"], 0) << got;
}

INSTANTIATE_WARM_SUITE(WarmSeccompEscape);

}  // namespace
}  // namespace zygo::testing
