// The connection caps fitted to the open-file limit, and the count per client and in all.
#include "supervisor/connection_limits.h"

#include "gtest/gtest.h"

namespace zygo::supervisor {
namespace {

HttpLimits Caps(size_t total, size_t per_client) {
  HttpLimits limits;
  limits.max_connections = total;
  limits.max_connections_per_client = per_client;
  return limits;
}

TEST(FitToOpenFilesTest, CapsStayWellBelowTheOpenFileLimit) {
  // The soft limit most distributions start a process with: 256 kept, two fds each.
  HttpLimits fitted = FitToOpenFiles(HttpLimits(), 1024);
  EXPECT_EQ(fitted.max_connections, 384u);
  EXPECT_EQ(fitted.max_connections_per_client, 256u);
  // Room enough: the defaults stand, and so do the timeouts.
  fitted = FitToOpenFiles(HttpLimits(), 1 << 20);
  EXPECT_EQ(fitted.max_connections, 4096u);
  EXPECT_EQ(fitted.max_connections_per_client, 256u);
  EXPECT_EQ(fitted.request_timeout, absl::Seconds(30));
  EXPECT_EQ(fitted.idle_timeout, absl::Seconds(75));
  // A quarter is kept when that is more than 256.
  EXPECT_EQ(FitToOpenFiles(HttpLimits(), 4096).max_connections, 1536u);
  // Nothing to spare still allows one connection.
  fitted = FitToOpenFiles(HttpLimits(), 200);
  EXPECT_EQ(fitted.max_connections, 1u);
  EXPECT_EQ(fitted.max_connections_per_client, 1u);
}

TEST(FitToOpenFilesTest, ThePerClientCapIsAtMostTheGlobalOne) {
  EXPECT_EQ(FitToOpenFiles(Caps(10, 50), 1 << 20).max_connections_per_client, 10u);
}

TEST(ConnectionAdmissionTest, OneClientPastItsCapLeavesOthersRoom) {
  ConnectionAdmission admission(Caps(5, 2));
  EXPECT_TRUE(admission.Admit(1000).ok());
  EXPECT_TRUE(admission.Admit(1000).ok());
  absl::Status third = admission.Admit(1000);
  EXPECT_TRUE(absl::IsUnavailable(third)) << third;
  EXPECT_EQ(third.message(), "uid 1000 has 2 connections open, the most one client may have");
  EXPECT_EQ(admission.open_of(1000), 2u);
  // Another uid is counted apart.
  EXPECT_TRUE(admission.Admit(0).ok());
  EXPECT_EQ(admission.open(), 3u);
  // One of the first client's connections goes: it may open one again.
  admission.Release(1000);
  EXPECT_TRUE(admission.Admit(1000).ok());
}

TEST(ConnectionAdmissionTest, TheGlobalCapRefusesEveryone) {
  ConnectionAdmission admission(Caps(2, 2));
  EXPECT_TRUE(admission.Admit(1).ok());
  EXPECT_TRUE(admission.Admit(2).ok());
  absl::Status refused = admission.Admit(3);
  EXPECT_EQ(refused.message(),
            "the supervisor has 2 connections open, the most it takes; try again");
  EXPECT_EQ(admission.open_of(3), 0u);
  admission.Release(3);  // never counted: changes nothing
  EXPECT_EQ(admission.open(), 2u);
  admission.Release(2);
  EXPECT_TRUE(admission.Admit(3).ok());
}

}  // namespace
}  // namespace zygo::supervisor
