// The default socket path for root and for users with and without XDG_RUNTIME_DIR, and
// the order of the overrides (--socket, then $ZYGO_SOCKET).
#include "sdk/cpp/zygo/socket_path.h"

#include <stdlib.h>

#include "gtest/gtest.h"

namespace zygo::sdk {
namespace {

TEST(SocketPathTest, RootUsesRun) {
  EXPECT_EQ(DefaultSocketPathFor(0, "/run/user/0"), "/run/zygo/zygo.sock");
  EXPECT_EQ(DefaultSocketPathFor(0, nullptr), "/run/zygo/zygo.sock");
}

TEST(SocketPathTest, UserUsesXdgRuntimeDir) {
  EXPECT_EQ(DefaultSocketPathFor(1000, "/run/user/1000"), "/run/user/1000/zygo/zygo.sock");
}

TEST(SocketPathTest, UserWithoutXdgRuntimeDirUsesTmp) {
  EXPECT_EQ(DefaultSocketPathFor(1000, nullptr), "/tmp/zygo-1000/zygo.sock");
  EXPECT_EQ(DefaultSocketPathFor(1000, ""), "/tmp/zygo-1000/zygo.sock");
}

TEST(SocketPathTest, FlagBeatsEnvironmentBeatsDefault) {
  unsetenv("ZYGO_SOCKET");
  EXPECT_EQ(ResolveSocketPath(""), DefaultSocketPath());
  setenv("ZYGO_SOCKET", "/tmp/from-env.sock", 1);
  EXPECT_EQ(ResolveSocketPath(""), "/tmp/from-env.sock");
  EXPECT_EQ(ResolveSocketPath("/tmp/from-flag.sock"), "/tmp/from-flag.sock");
  setenv("ZYGO_SOCKET", "", 1);
  EXPECT_EQ(ResolveSocketPath(""), DefaultSocketPath());
  unsetenv("ZYGO_SOCKET");
}

}  // namespace
}  // namespace zygo::sdk
