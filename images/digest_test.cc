// sha256 known-answer vectors, incremental hashing and digest validation.
#include "images/digest.h"

#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zygo::images {
namespace {

using ::testing::HasSubstr;

constexpr char kEmpty[] = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
constexpr char kAbc[] = "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
// FIPS 180-2's two-block vector.
constexpr char kTwoBlock[] =
    "sha256:248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1";
// One million 'a's.
constexpr char kMillionA[] =
    "sha256:cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";

TEST(DigestTest, KnownVectors) {
  EXPECT_EQ(Sha256Digest(""), kEmpty);
  EXPECT_EQ(Sha256Digest("abc"), kAbc);
  EXPECT_EQ(Sha256Digest("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"), kTwoBlock);
  EXPECT_EQ(Sha256Digest(std::string(1000000, 'a')), kMillionA);
}

TEST(DigestTest, IncrementalMatchesOneShot) {
  std::string data(1000000, 'a');
  Sha256Hasher hasher;
  for (size_t offset = 0; offset < data.size(); offset += 4097) {
    hasher.Update(data.data() + offset, std::min<size_t>(4097, data.size() - offset));
  }
  hasher.Update(nullptr, 0);
  EXPECT_EQ(hasher.Finish(), kMillionA);
}

TEST(DigestTest, HashesFiles) {
  std::string dir = ::testing::TempDir();
  std::string path = dir + "/digest_test_file";
  {
    std::ofstream out(path, std::ios::binary);
    out << std::string(3 << 20, 'a') << "abc";  // more than one read buffer
  }
  Sha256Hasher hasher;
  std::string expected_data = std::string(3 << 20, 'a') + "abc";
  absl::StatusOr<std::string> digest = Sha256DigestOfFile(path);
  ASSERT_TRUE(digest.ok()) << digest.status();
  EXPECT_EQ(*digest, Sha256Digest(expected_data));

  std::ofstream(path, std::ios::binary | std::ios::trunc).flush();
  EXPECT_EQ(*Sha256DigestOfFile(path), kEmpty);
  unlink(path.c_str());

  absl::StatusOr<std::string> missing = Sha256DigestOfFile(dir + "/no_such_file");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("no_such_file"));
}

TEST(DigestTest, ValidatesForm) {
  EXPECT_TRUE(ValidateDigest(kAbc).ok());
  EXPECT_EQ(DigestHex(kAbc), std::string(kAbc).substr(7));

  struct Case {
    std::string digest, problem;
  } cases[] = {
      {"", "expected sha256:"},
      {"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", "expected sha256:"},
      {"sha512:" + std::string(128, 'a'), "only sha256"},
      {"SHA256:" + std::string(64, 'a'), "only sha256"},
      {"sha256:" + std::string(63, 'a'), "63 hex digits"},
      {"sha256:" + std::string(65, 'a'), "65 hex digits"},
      {"sha256:" + std::string(64, 'A'), "lowercase hex"},
      {"sha256:" + std::string(63, 'a') + "g", "lowercase hex"},
      {"sha256:../../../../../../etc/passwd" + std::string(36, 'a'), "lowercase hex"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.digest);
    absl::Status status = ValidateDigest(c.digest);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(), HasSubstr(c.problem));
    EXPECT_EQ(DigestHex(c.digest), "");
  }
}

}  // namespace
}  // namespace zygo::images
