// The Node peers on their own, with the host's node: both answer the bench's handler with
// what it returns, the spawn peer counts the CPU of the nodes it spawned, and a handler's
// failure is a reply, not a dead peer. Skips without /usr/bin/node.
#include "bench/warm/node_peer.h"

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "bench/warm/node_workload.h"
#include "bench/warm/warm_driver.h"
#include "bench/warm/warm_workload.h"
#include "core/base/sys/atomic_write.h"
#include "gtest/gtest.h"

namespace zygo::bench {
namespace {

constexpr char kNode[] = "/usr/bin/node";

// A handler that keeps a counter in module scope and fails on request 13.
constexpr char kCounterHandler[] = R"(let count = 0;
exports.main = (event) => {
  if (event.n === 13) throw new RangeError("unlucky");
  count += 1;
  return { count };
};
)";

class NodePeers : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access(kNode, X_OK) != 0) GTEST_SKIP() << "needs " << kNode;
    // Under /tmp, not TEST_TMPDIR: the vm peer's socket path must fit in sun_path.
    char dir[] = "/tmp/zygo-node-peer-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    handler_ = dir_ + "/handler.js";
    ASSERT_TRUE(base::sys::WriteFileAtomically(handler_, NodeHandlerSource(0)).ok());
    ASSERT_TRUE(base::sys::WriteFileAtomically(dir_ + "/counter.js", kCounterHandler).ok());
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  std::string dir_;
  std::string handler_;
};

TEST_F(NodePeers, TheSpawnPeerRunsTheHandlerAndCountsItsCpu) {
  absl::StatusOr<NodeSpawnPeer> peer = NodeSpawnPeer::Create(kNode, dir_, handler_, "main");
  ASSERT_TRUE(peer.ok()) << peer.status();
  std::vector<std::string> replies;
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<std::string> reply = peer->Call(EventJson(i));
    ASSERT_TRUE(reply.ok()) << reply.status();
    replies.push_back(*reply);
  }
  EXPECT_TRUE(CheckPeerReplies(replies, &HandlerResultMatches).ok()) << replies[0];
  // A node start costs milliseconds of CPU; three cannot be less than one.
  EXPECT_GT(peer->cpu_seconds(), 0.001);
  EXPECT_LT(peer->cpu_seconds(), 10);
}

TEST_F(NodePeers, TheSpawnPeerLeavesTheCallersNodeVariablesOut) {
  // Inherited, this would make every node fail before the runner starts.
  ASSERT_EQ(setenv("NODE_OPTIONS", "--require /nonexistent/preload.js", 1), 0);
  absl::StatusOr<NodeSpawnPeer> peer = NodeSpawnPeer::Create(kNode, dir_, handler_, "main");
  unsetenv("NODE_OPTIONS");
  ASSERT_TRUE(peer.ok()) << peer.status();
  absl::StatusOr<std::string> reply = peer->Call(EventJson(0));
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_TRUE(CheckPeerReplies({*reply}, &HandlerResultMatches).ok()) << *reply;
}

TEST_F(NodePeers, TheSpawnPeerStartsCleanAndReportsAFailure) {
  absl::StatusOr<NodeSpawnPeer> peer =
      NodeSpawnPeer::Create(kNode, dir_, dir_ + "/counter.js", "main");
  ASSERT_TRUE(peer.ok()) << peer.status();
  EXPECT_EQ(peer->Call(EventJson(1)).value_or(""), R"({"ok":true,"result":{"count":1}})");
  EXPECT_EQ(peer->Call(EventJson(2)).value_or(""), R"({"ok":true,"result":{"count":1}})");
  absl::StatusOr<std::string> failed = peer->Call(EventJson(13));
  ASSERT_TRUE(failed.ok()) << failed.status();
  EXPECT_EQ(*failed, R"({"ok":false,"error":{"type":"RangeError","message":"unlucky"}})");
}

TEST_F(NodePeers, TheVmPeerRunsEachRequestInANewContext) {
  absl::StatusOr<std::unique_ptr<PeerServer>> server =
      PeerServer::Start(NodeVmPeerScript(kNode), dir_, handler_, "main");
  ASSERT_TRUE(server.ok()) << server.status();
  absl::StatusOr<PeerConnection> connection = PeerConnection::Connect((*server)->socket_path());
  ASSERT_TRUE(connection.ok()) << connection.status();
  std::vector<std::string> replies;
  for (int i = 0; i < 5; ++i) {
    absl::StatusOr<std::string> reply = connection->Call(EventJson(i));
    ASSERT_TRUE(reply.ok()) << reply.status();
    replies.push_back(*reply);
  }
  EXPECT_TRUE(CheckPeerReplies(replies, &HandlerResultMatches).ok()) << replies[0];
  EXPECT_TRUE((*server)->Stop().ok());

  // Module scope is the context's: a counter starts over on every request, as in a new
  // worker; a thrown error is that request's reply and the next one is served.
  absl::StatusOr<std::unique_ptr<PeerServer>> counter =
      PeerServer::Start(NodeVmPeerScript(kNode), dir_, dir_ + "/counter.js", "main");
  ASSERT_TRUE(counter.ok()) << counter.status();
  absl::StatusOr<PeerConnection> again = PeerConnection::Connect((*counter)->socket_path());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->Call(EventJson(1)).value_or(""), R"({"ok":true,"result":{"count":1}})");
  EXPECT_EQ(again->Call(EventJson(2)).value_or(""), R"({"ok":true,"result":{"count":1}})");
  absl::StatusOr<std::string> failed = again->Call(EventJson(13));
  ASSERT_TRUE(failed.ok()) << failed.status();
  EXPECT_TRUE(absl::StrContains(*failed, R"("ok":false)")) << *failed;
  EXPECT_TRUE(absl::StrContains(*failed, "unlucky")) << *failed;
  EXPECT_EQ(again->Call(EventJson(3)).value_or(""), R"({"ok":true,"result":{"count":1}})");
}

TEST(NodePeer, AMissingNodeIsAnError) {
  EXPECT_FALSE(NodeSpawnPeer::Create("/nonexistent/node", "/tmp", "/tmp/h.js", "main").ok());
  EXPECT_EQ(NodeVersion("/nonexistent/node"), "version unknown");
}

}  // namespace
}  // namespace zygo::bench
