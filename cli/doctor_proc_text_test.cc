// The parent's reading of what doctor's children found in /proc.
#include "cli/doctor_proc_text.h"

#include <stdlib.h>

#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace zygo::cli {
namespace {

TEST(FileListsPid, WholeLinesOnly) {
  std::string path = std::string(getenv("TEST_TMPDIR")) + "/cgroup.procs";
  std::ofstream(path) << "12\n345\n7\n";
  EXPECT_TRUE(FileListsPid(path.c_str(), 345));
  EXPECT_TRUE(FileListsPid(path.c_str(), 7));
  EXPECT_TRUE(FileListsPid(path.c_str(), 12));
  EXPECT_FALSE(FileListsPid(path.c_str(), 34));
  EXPECT_FALSE(FileListsPid(path.c_str(), 3456));
  EXPECT_FALSE(FileListsPid(path.c_str(), 1));
  EXPECT_FALSE(FileListsPid("/no/such/cgroup.procs", 12));
}

TEST(DefaultRouteInterface, FindsTheZeroDestination) {
  const char* route =
      "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
      "eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n"
      "eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n";
  EXPECT_EQ(DefaultRouteInterface(route), "eth0");
  EXPECT_EQ(DefaultRouteInterface("Iface\tDestination\tGateway\n"), "");
}

}  // namespace
}  // namespace zygo::cli
