// UnpackLayer: contents, metadata and diff_id of layers built here, and the refusals
// (each after a benign archive of the same shape unpacks), checked against a canary
// directory next to dest. Unprivileged.
#include "images/layer_unpack.h"

#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "images/layer_unpack_testing.h"

namespace zygo::images {
namespace {

using testing::Compress;
using testing::Compression;
using testing::Dir;
using ::testing::ElementsAre;
using testing::Fifo;
using testing::File;
using testing::Hardlink;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::ListTree;
using testing::Sandbox;
using testing::Symlink;
using testing::TarBytes;
using testing::TarEntry;
using testing::WriteFile;

absl::StatusOr<UnpackResult> Unpack(const Sandbox& box, const std::vector<TarEntry>& entries,
                                    Compression compression = Compression::kNone,
                                    UnpackOptions options = {}) {
  box.ResetDest();
  WriteFile(box.layer, TarBytes(entries, compression));
  return UnpackLayer(box.layer, box.dest, options);
}

// Unpacks `bad`, expects a refusal naming `culprit`, and expects nothing outside dest to
// have changed.
void ExpectRefused(const Sandbox& box, const std::vector<TarEntry>& bad,
                   const std::string& culprit) {
  std::vector<std::string> before = box.Outside();
  absl::StatusOr<UnpackResult> result = Unpack(box, bad);
  ASSERT_FALSE(result.ok()) << "unpacked although " << culprit << " should be refused";
  EXPECT_THAT(result.status().message(), HasSubstr(culprit));
  EXPECT_EQ(box.Outside(), before);
}

struct stat Lstat(const std::string& path) {
  struct stat st = {};
  EXPECT_EQ(lstat(path.c_str(), &st), 0) << path;
  return st;
}

TEST(UnpackLayerTest, UnpacksFilesDirectoriesLinksAndMetadata) {
  Sandbox box;
  TarEntry setuid = File("./usr/bin/tool", "#!", 04755);
  absl::StatusOr<UnpackResult> result =
      Unpack(box,
             {Dir("./"), Dir("./etc", 0750), File("./etc/hosts", "127.0.0.1 localhost\n", 0640),
              File("implicit/parents/file", "x"), Dir("ro", 0555), File("ro/inside", "y", 0444),
              setuid, Symlink("etc/link", "/etc/hosts"), Symlink("up", "../../../../anything"),
              Hardlink("etc/hard", "./etc/hosts"), Fifo("pipe")},
             Compression::kGzip);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->files, 11 - 1);  // "./" is the root, not an entry
  EXPECT_EQ(result->bytes, 20 + 1 + 1 + 2);
  EXPECT_THAT(
      ListTree(box.dest),
      ElementsAre("d etc 0750", "d implicit 0755", "d implicit/parents 0755", "d ro 0555",
                  "d usr 0755", "d usr/bin 0755", "f etc/hard 0640 =127.0.0.1 localhost\n",
                  "f etc/hosts 0640 =127.0.0.1 localhost\n", "f implicit/parents/file 0644 =x",
                  "f ro/inside 0444 =y", "f usr/bin/tool 4755 =#!", "l etc/link -> /etc/hosts",
                  "l up -> ../../../../anything", "p pipe"));
  EXPECT_EQ(Lstat(box.dest + "/etc/hard").st_ino, Lstat(box.dest + "/etc/hosts").st_ino);
  EXPECT_EQ(Lstat(box.dest + "/etc/hosts").st_mtime, 1700000000);
  EXPECT_EQ(Lstat(box.dest + "/etc").st_mtime, 1700000000);  // set after its contents
  EXPECT_EQ(Lstat(box.dest + "/etc/link").st_mtime, 1700000000);
}

TEST(UnpackLayerTest, KeepsUtf8Names) {
  Sandbox box;
  absl::StatusOr<UnpackResult> result = Unpack(box, {File("caf\xc3\xa9/na\xc3\xafve.txt", "z")});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(testing::ReadFile(box.dest + "/caf\xc3\xa9/na\xc3\xafve.txt"), "z");
}

TEST(UnpackLayerTest, DiffIdIsSha256OfTheUncompressedStream) {
  Sandbox box;
  std::string tar = TarBytes({Dir("d"), File("d/f", std::string(100000, 'q'))});
  tar += std::string(4096, '\0');  // bytes after the end-of-archive blocks count too
  const std::string expected = testing::IndependentSha256(tar);
  for (Compression compression : {Compression::kNone, Compression::kGzip, Compression::kZstd}) {
    box.ResetDest();
    std::string layer = Compress(tar, compression);
    if (compression != Compression::kNone) {
      ASSERT_NE(layer, tar);
    }
    WriteFile(box.layer, layer);
    absl::StatusOr<UnpackResult> result = UnpackLayer(box.layer, box.dest);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->diff_id, expected) << static_cast<int>(compression);
    EXPECT_EQ(testing::ReadFile(box.dest + "/d/f"), std::string(100000, 'q'));
  }
}

TEST(UnpackLayerTest, EmptyLayerHasTheWellKnownDiffId) {
  Sandbox box;
  WriteFile(box.layer, std::string(1024, '\0'));  // what docker writes for an empty layer
  absl::StatusOr<UnpackResult> result = UnpackLayer(box.layer, box.dest);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->diff_id,
            "sha256:5f70bf18a086007016e948b04aed3b82103a36bea41755b6cddfaf10ace3c6ef");
  EXPECT_THAT(ListTree(box.dest), IsEmpty());
}

TEST(UnpackLayerTest, CorruptLayersFail) {
  Sandbox box;
  std::string gz = TarBytes({File("f", std::string(50000, 'r'))}, Compression::kGzip);
  WriteFile(box.layer, gz.substr(0, gz.size() / 2));
  EXPECT_FALSE(UnpackLayer(box.layer, box.dest).ok());
  box.ResetDest();
  WriteFile(box.layer, "this is not a tar archive, not even close to one");
  EXPECT_FALSE(UnpackLayer(box.layer, box.dest).ok());
  EXPECT_TRUE(absl::IsNotFound(UnpackLayer(box.root + "/missing.tar", box.dest).status()));
}

TEST(UnpackLayerTest, LaterEntriesReplaceEarlierOnes) {
  Sandbox box;
  absl::StatusOr<UnpackResult> result = Unpack(
      box, {File("x", "file"), Dir("x"), File("x/y", "in dir"), Dir("s"), File("s/deep", "gone"),
            File("s", "now a file"), File("f", "one"), File("f", "two"), Symlink("l", "a"),
            Symlink("l", "b"), Dir("d", 0700), Dir("d", 0711)});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(ListTree(box.dest),
              ElementsAre("d d 0711", "d x 0755", "f f 0644 =two", "f s 0644 =now a file",
                          "f x/y 0644 =in dir", "l l -> b"));
}

// Reserved ".wh..wh." names other than the opaque marker (aufs metadata) are dropped.
TEST(UnpackLayerTest, KeepsWhiteoutsAsEmptyMarkers) {
  Sandbox box;
  absl::StatusOr<UnpackResult> result =
      Unpack(box, {Dir("etc"), File("etc/.wh.passwd", "ignored bytes"),
                   File("opq/.wh..wh..opq", ""), File(".wh.top", ""), Dir(".wh..wh.plnk"),
                   File(".wh..wh.plnk/123.456", "aufs"), File("etc/.wh..wh.aufs", "")});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(ListTree(box.dest),
              ElementsAre("d etc 0755", "d opq 0755", "f .wh.top 0644 =", "f etc/.wh.passwd 0644 =",
                          "f opq/.wh..wh..opq 0644 ="));
  ExpectRefused(box, {Dir(".wh.dir")}, ".wh.dir");
  ExpectRefused(box, {File(".wh..", "")}, ".wh..");
}

TEST(UnpackLayerTest, RefusesDotDotNames) {
  Sandbox box;
  ASSERT_TRUE(Unpack(box, {File("escape", "benign"), File("a/b/x", "benign")}).ok());
  ExpectRefused(box, {File("../escape", "evil")}, "../escape");
  ExpectRefused(box, {File("../../../outside/secret", "evil")}, "../../../outside/secret");
  ExpectRefused(box, {Dir("a"), File("a/../../x", "evil")}, "a/../../x");
  ExpectRefused(box, {Dir("..")}, "..");
}

TEST(UnpackLayerTest, RefusesAbsoluteNames) {
  Sandbox box;
  ASSERT_TRUE(Unpack(box, {File("abs", "benign")}).ok());
  ExpectRefused(box, {File("/abs", "evil")}, "/abs");
  ExpectRefused(box, {File(box.outside + "/secret", "evil")}, box.outside + "/secret");
  EXPECT_EQ(testing::ReadFile(box.outside + "/secret"), "canary");
}

TEST(UnpackLayerTest, RefusesWritingThroughASymlinkToRoot) {
  Sandbox box;
  // "link/..." through a symlink to / would reach the host path box.outside/... .
  const std::string through = "link" + box.outside + "/planted";
  ASSERT_TRUE(Unpack(box, {Dir("link"), File(through, "benign")}).ok());
  ExpectRefused(box, {Symlink("link", "/"), File(through, "evil")}, "link");
  // "link/etc/passwd" is the classic shape; the canary stands in for the host file, so
  // that a broken unpack (this runs as root in CI) overwrites nothing that matters.
  ExpectRefused(box, {Symlink("link", box.outside), File("link/secret", "evil")}, "link/secret");
  ExpectRefused(box, {Symlink("link", "/"), Dir(through)}, through);
  EXPECT_FALSE(std::filesystem::exists(box.outside + "/planted"));
}

TEST(UnpackLayerTest, RefusesWritingThroughASymlinkUpwards) {
  Sandbox box;
  // d -> ../.. from dest (root/a/b/dest) is root/a: d/x would be root/a/x.
  absl::StatusOr<UnpackResult> benign = Unpack(box, {Symlink("d", "../.."), File("e/x", "ok")});
  ASSERT_TRUE(benign.ok()) << benign.status();  // a symlink may point anywhere
  ExpectRefused(box, {Symlink("d", "../.."), File("d/x", "evil")}, "d/x");
  ExpectRefused(box, {Symlink("d", "../../../outside"), File("d/secret", "evil")}, "d/secret");
  ExpectRefused(box, {Dir("e"), Symlink("e/d", "../../.."), Dir("e/d/sub")}, "e/d/sub");
  EXPECT_EQ(testing::ReadFile(box.outside + "/secret"), "canary");
}

TEST(UnpackLayerTest, RefusesHardlinksOutOfTheLayer) {
  Sandbox box;
  ASSERT_TRUE(Unpack(box, {File("f", "benign"), Hardlink("h", "f")}).ok());
  const std::string secret = box.outside + "/secret";
  ExpectRefused(box, {Hardlink("h", "../../../outside/secret")}, "../../../outside/secret");
  ExpectRefused(box, {Hardlink("h", secret)}, secret);
  ExpectRefused(box, {Symlink("l", "/"), Hardlink("h", "l" + secret)}, "l" + secret);
  ExpectRefused(box, {Symlink("l", "../../../outside"), Hardlink("h", "l/secret")}, "l/secret");
  ExpectRefused(box, {Hardlink("h", "missing")}, "missing");
  EXPECT_EQ(Lstat(secret).st_nlink, 1u);  // never linked into dest
}

TEST(UnpackLayerTest, RefusesAWhiteoutThroughASymlinkedDirectory) {
  Sandbox box;
  absl::StatusOr<UnpackResult> benign = Unpack(box, {Dir("l"), File("l/.wh.secret", "")});
  ASSERT_TRUE(benign.ok()) << benign.status();
  ExpectRefused(box, {Symlink("l", box.outside), File("l/.wh.secret", "")}, "l/.wh.secret");
  ExpectRefused(box, {Symlink("l", box.outside), File("l/.wh..wh..opq", "")}, "l/.wh..wh..opq");
  EXPECT_EQ(testing::ReadFile(box.outside + "/secret"), "canary");
}

TEST(UnpackLayerTest, RefusesDeviceNodesWithoutAllowDevices) {
  Sandbox box;
  ASSERT_TRUE(Unpack(box, {Dir("dev"), File("dev/null", "")}).ok());
  std::vector<TarEntry> device = {Dir("dev"), testing::CharDevice("dev/null", 1, 3)};
  absl::StatusOr<UnpackResult> result = Unpack(box, device);
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.status().message(), HasSubstr("dev/null"));
  EXPECT_THAT(result.status().message(), HasSubstr("cannot create device nodes"));
  EXPECT_FALSE(std::filesystem::exists(box.dest + "/dev/null"));
}

}  // namespace
}  // namespace zygo::images
