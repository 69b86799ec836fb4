#include "bench/pull/store_snapshot.h"

#include <stdlib.h>
#include <unistd.h>

#include "gtest/gtest.h"

namespace zygo::bench {
namespace {

TEST(DescribeAdded, NamesNewReferencesAndCountsNewEntries) {
  StoreSnapshot before{{"docker.io/library/python:bench"}, {"blobs/a", "layers/b", "rootfs/c"}};
  StoreSnapshot after = before;
  EXPECT_EQ(DescribeAdded(before, after), "");
  EXPECT_FALSE(AddedBytecodeImage(before, after));
  after.references.insert("docker.io/library/python:bench+bytecode.ab12");
  after.entries.insert({"blobs/d", "blobs/e", "layers/f", "rootfs/g"});
  EXPECT_EQ(DescribeAdded(before, after),
            "references docker.io/library/python:bench+bytecode.ab12; 2 blobs, 1 layer, 1 rootfs");
  EXPECT_TRUE(AddedBytecodeImage(before, after));
}

TEST(AddedBytecodeImage, OnlyANewBytecodeReferenceCounts) {
  StoreSnapshot before{{"x+bytecode.1"}, {}};
  StoreSnapshot after{{"x+bytecode.1", "docker.io/library/busybox:bench"}, {"rootfs/a"}};
  EXPECT_FALSE(AddedBytecodeImage(before, after));
  EXPECT_EQ(DescribeAdded(before, after), "references docker.io/library/busybox:bench; 1 rootfs");
}

TEST(TakeStoreSnapshot, AnAbsentStoreIsEmptyAndNotCreated) {
  const char* tmp = getenv("TEST_TMPDIR");
  std::string root = std::string(tmp != nullptr ? tmp : "/tmp") + "/no-such-store";
  absl::StatusOr<StoreSnapshot> snapshot = TakeStoreSnapshot(root);
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  EXPECT_TRUE(snapshot->references.empty());
  EXPECT_TRUE(snapshot->entries.empty());
  EXPECT_NE(access(root.c_str(), F_OK), 0) << "the snapshot created " << root;
}

}  // namespace
}  // namespace zygo::bench
