#include "runtime/image_source.h"

#include "gtest/gtest.h"

namespace zygo::runtime {
namespace {

TEST(ImageSource, ParsesTheThreeForms) {
  absl::StatusOr<ImageSource> host = ParseImageSource("host");
  ASSERT_TRUE(host.ok()) << host.status();
  EXPECT_EQ(host->kind, ImageSource::Kind::kHost);
  EXPECT_TRUE(host->BuiltInRoot().host());

  absl::StatusOr<ImageSource> dir = ParseImageSource("dir:/srv/root");
  ASSERT_TRUE(dir.ok()) << dir.status();
  EXPECT_EQ(dir->kind, ImageSource::Kind::kDirectory);
  EXPECT_EQ(dir->BuiltInRoot().Describe(), "dir:/srv/root");

  absl::StatusOr<ImageSource> oci = ParseImageSource("127.0.0.1:5000/app:v1");
  ASSERT_TRUE(oci.ok()) << oci.status();
  EXPECT_TRUE(oci->oci());
  EXPECT_EQ(oci->reference.registry, "127.0.0.1:5000");
  EXPECT_EQ(oci->reference.tag, "v1");
  EXPECT_EQ(oci->text, "127.0.0.1:5000/app:v1");
}

TEST(ImageSource, RefusesWhatIsNoneOfThem) {
  struct Case {
    const char* text;
    const char* says;
  };
  for (const Case& c : {Case{"dir:relative", "absolute path"}, Case{"dir:", "absolute path"},
                        Case{"Python", "lowercase"}, Case{"", "\"host\", \"dir:/abs/path\""}}) {
    absl::StatusOr<ImageSource> parsed = ParseImageSource(c.text);
    ASSERT_FALSE(parsed.ok()) << c.text;
    EXPECT_NE(parsed.status().message().find(c.says), std::string::npos)
        << c.text << ": " << parsed.status();
  }
}

}  // namespace
}  // namespace zygo::runtime
