// UnpackLayer and FlattenLayers as root: device nodes with allow_devices, and ownership
// (with setuid bits surviving the chown). Skips when not root.
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "images/layer_flatten.h"
#include "images/layer_unpack.h"
#include "images/layer_unpack_testing.h"

namespace zygo::images {
namespace {

using ::testing::HasSubstr;
using testing::Sandbox;
using testing::TarEntry;

class LayerUnpackRootTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (ownership and device nodes)";
  }

  absl::StatusOr<UnpackResult> Unpack(const std::vector<TarEntry>& entries, const std::string& dest,
                                      bool allow_devices) {
    testing::WriteFile(box_.layer, testing::TarBytes(entries));
    UnpackOptions options;
    options.allow_devices = allow_devices;
    return UnpackLayer(box_.layer, dest, options);
  }

  Sandbox box_;
};

struct stat Lstat(const std::string& path) {
  struct stat st = {};
  EXPECT_EQ(lstat(path.c_str(), &st), 0) << path;
  return st;
}

TEST_F(LayerUnpackRootTest, CreatesDeviceNodesOnlyWithAllowDevices) {
  std::string probe = box_.root + "/probe";
  if (mknod(probe.c_str(), S_IFCHR | 0600, makedev(1, 3)) != 0) {
    GTEST_SKIP() << "mknod is not permitted here (no CAP_MKNOD in this user namespace?)";
  }
  std::vector<TarEntry> layer = {testing::Dir("dev"), testing::CharDevice("dev/null", 1, 3)};
  absl::StatusOr<UnpackResult> refused = Unpack(layer, box_.dest, /*allow_devices=*/false);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("dev/null"));

  std::string layer_dir = testing::MakeTempDir();
  absl::StatusOr<UnpackResult> result = Unpack(layer, layer_dir, /*allow_devices=*/true);
  ASSERT_TRUE(result.ok()) << result.status();
  struct stat st = Lstat(layer_dir + "/dev/null");
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_EQ(st.st_rdev, makedev(1, 3));
  EXPECT_EQ(st.st_mode & 07777, 0666);

  ASSERT_TRUE(FlattenLayers({layer_dir}, box_.dest).ok());
  st = Lstat(box_.dest + "/dev/null");
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_EQ(st.st_rdev, makedev(1, 3));
  EXPECT_EQ(st.st_mode & 07777, 0666);
}

TEST_F(LayerUnpackRootTest, KeepsOwnershipAndSetuidBits) {
  TarEntry dir = testing::Dir("home", 0750);
  dir.uid = 1000;
  dir.gid = 1001;
  TarEntry tool = testing::File("home/tool", "t", 06755);
  tool.uid = 1234;
  tool.gid = 5678;
  TarEntry link = testing::Symlink("home/link", "tool");
  link.uid = 4321;
  link.gid = 8765;
  std::string layer_dir = testing::MakeTempDir();
  absl::StatusOr<UnpackResult> result = Unpack({dir, tool, link}, layer_dir, false);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_TRUE(FlattenLayers({layer_dir}, box_.dest).ok());
  for (const std::string& root : {layer_dir, box_.dest}) {
    struct stat st = Lstat(root + "/home");
    EXPECT_EQ(st.st_uid, 1000u);
    EXPECT_EQ(st.st_gid, 1001u);
    EXPECT_EQ(st.st_mode & 07777, 0750);
    st = Lstat(root + "/home/tool");
    EXPECT_EQ(st.st_uid, 1234u);
    EXPECT_EQ(st.st_gid, 5678u);
    EXPECT_EQ(st.st_mode & 07777, 06755);  // set after the chown, which clears them
    st = Lstat(root + "/home/link");
    EXPECT_EQ(st.st_uid, 4321u);
    EXPECT_EQ(st.st_gid, 8765u);
  }
}

}  // namespace
}  // namespace zygo::images
