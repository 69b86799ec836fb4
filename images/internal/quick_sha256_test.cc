#include "images/internal/quick_sha256.h"

#include <string>

#include "gtest/gtest.h"
#include "images/digest.h"

namespace zygo::images {
namespace {

TEST(QuickSha256, MatchesTheStoresDigest) {
  EXPECT_EQ(QuickSha256Digest(""),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  for (const std::string& text :
       {std::string("abc"), std::string(100000, 'x'), std::string("{\"zygo\":\"bytecode\"}\n")}) {
    EXPECT_EQ(QuickSha256Digest(text), Sha256Digest(text));
  }
}

}  // namespace
}  // namespace zygo::images
