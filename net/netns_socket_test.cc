// Sockets opened for another network namespace live there, and the caller stays put.
#include "net/netns_socket.h"

#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <memory>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "net/internal/test_netns.h"

namespace zygo::net {
namespace {

ino_t Inode(int fd) {
  struct stat st = {};
  EXPECT_EQ(fstat(fd, &st), 0);
  return st.st_ino;
}

// The namespace a socket belongs to (SIOCGSKNS, Linux 4.9).
ino_t SocketNetns(int socket_fd) {
  base::UniqueFd ns(ioctl(socket_fd, SIOCGSKNS));
  EXPECT_TRUE(ns.valid()) << strerror(errno);
  return ns.valid() ? Inode(ns.get()) : 0;
}

ino_t OwnNetns() {
  base::UniqueFd ns(open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
  return Inode(ns.get());
}

class NetnsSocketTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to create network namespaces";
    absl::StatusOr<std::unique_ptr<testing::TestNetns>> netns = testing::TestNetns::Create();
    ASSERT_TRUE(netns.ok()) << netns.status();
    netns_ = *std::move(netns);
  }

  std::unique_ptr<testing::TestNetns> netns_;
};

TEST_F(NetnsSocketTest, SocketLivesInTheTargetAndTheCallerStays) {
  const ino_t before = OwnNetns();
  ASSERT_NE(before, Inode(netns_->fd()));  // control: the test netns is another one
  absl::StatusOr<base::UniqueFd> fd = OpenSocketInNetns(netns_->fd(), AF_INET, SOCK_DGRAM, 0);
  ASSERT_TRUE(fd.ok()) << fd.status();
  EXPECT_EQ(SocketNetns(fd->get()), Inode(netns_->fd()));
  EXPECT_EQ(OwnNetns(), before);
  EXPECT_NE(fcntl(fd->get(), F_GETFD) & FD_CLOEXEC, 0);

  // Control: a socket made the ordinary way is in the caller's namespace.
  base::UniqueFd here(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  EXPECT_EQ(SocketNetns(here.get()), before);
}

TEST_F(NetnsSocketTest, NetlinkSocketIsBoundInTheTarget) {
  absl::StatusOr<base::UniqueFd> fd = OpenNetlinkInNetns(netns_->fd());
  ASSERT_TRUE(fd.ok()) << fd.status();
  EXPECT_EQ(SocketNetns(fd->get()), Inode(netns_->fd()));
  sockaddr_nl address = {};
  socklen_t size = sizeof(address);
  ASSERT_EQ(getsockname(fd->get(), reinterpret_cast<sockaddr*>(&address), &size), 0);
  EXPECT_EQ(address.nl_family, AF_NETLINK);
  EXPECT_NE(address.nl_pid, 0u);
  int protocol = 0;
  socklen_t len = sizeof(protocol);
  ASSERT_EQ(getsockopt(fd->get(), SOL_SOCKET, SO_PROTOCOL, &protocol, &len), 0);
  EXPECT_EQ(protocol, NETLINK_NETFILTER);
}

TEST_F(NetnsSocketTest, ABadNamespaceFdNamesSetns) {
  base::UniqueFd not_a_netns(open("/proc/self/ns/uts", O_RDONLY | O_CLOEXEC));
  absl::StatusOr<base::UniqueFd> fd = OpenNetlinkInNetns(not_a_netns.get());
  ASSERT_FALSE(fd.ok());
  EXPECT_TRUE(absl::StrContains(fd.status().message(), "setns(CLONE_NEWNET)")) << fd.status();
  EXPECT_FALSE(OpenSocketInNetns(-1, AF_INET, SOCK_DGRAM, 0).ok());
}

}  // namespace
}  // namespace zygo::net
