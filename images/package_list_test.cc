#include "images/package_list.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zygo::images {
namespace {

using ::testing::ElementsAre;

TEST(PackageList, DebianNamesOnly) {
  for (const char* name : {"curl", "libpq5", "g++", "python3.11", "libstdc++6", "0ad", "a-b.c+d"}) {
    EXPECT_TRUE(ValidatePackageName(name).ok()) << name;
  }
  for (const char* name : {"", "x", "Curl", "-o", "--help", "+x", ".x", "curl=7.88", "curl:amd64",
                           "a b", "a/b", "a_b", "curl*", "~x"}) {
    absl::Status status = ValidatePackageName(name);
    EXPECT_TRUE(absl::IsInvalidArgument(status)) << name;
  }
  EXPECT_EQ(ValidatePackageName("-o").message(),
            "\"-o\" is not a Debian package name: lowercase letters, digits, '+', '-' and '.', "
            "at least two, starting with a letter or digit");
}

TEST(PackageList, CanonicalIsSortedAndUnique) {
  absl::StatusOr<std::vector<std::string>> list = CanonicalPackageList({"zlib1g", "curl", "curl"});
  ASSERT_TRUE(list.ok());
  EXPECT_THAT(*list, ElementsAre("curl", "zlib1g"));
  EXPECT_FALSE(CanonicalPackageList({"curl", "Bad"}).ok());
}

}  // namespace
}  // namespace zygo::images
