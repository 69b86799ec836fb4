// apt's source formats and the hosts they name: what a system-package build may reach.
// Pure parsing, plus ReadAptSources on a root in a test directory (no privileges).
#include "images/apt_sources.h"

#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testing/test_dir.h"

namespace zygo::images {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> Uris(const std::vector<AptSource>& sources) {
  std::vector<std::string> uris;
  for (const AptSource& source : sources) uris.push_back(source.uri);
  return uris;
}

TEST(AptSources, OneLineFormatWithOptionsAndComments) {
  absl::StatusOr<std::vector<AptSource>> sources = ParseOneLineSources(
      "# a comment\n"
      "deb http://deb.debian.org/debian bookworm main\n"
      "\n"
      "deb [arch=amd64 signed-by=/usr/share/keyrings/x.gpg] https://a.example/x stable main\n"
      "deb [ trusted=yes ] http://b.example:8080/y ./  # trailing comment\n"
      "deb-src http://src.example/debian bookworm main\n"
      "#deb http://disabled.example/debian bookworm main\n",
      "/etc/apt/sources.list");
  ASSERT_TRUE(sources.ok()) << sources.status();
  EXPECT_THAT(Uris(*sources), ElementsAre("http://deb.debian.org/debian", "https://a.example/x",
                                          "http://b.example:8080/y", "http://src.example/debian"));
  EXPECT_EQ((*sources)[0].line, 2);
  EXPECT_EQ((*sources)[2].line, 5);
  EXPECT_EQ((*sources)[2].file, "/etc/apt/sources.list");
}

TEST(AptSources, OneLineFormatErrorsNameTheLine) {
  absl::StatusOr<std::vector<AptSource>> unknown =
      ParseOneLineSources("deb http://a.example/ x main\nrpm http://b.example/ x\n", "/f.list");
  EXPECT_EQ(unknown.status().message(), "/f.list:2: unknown source type \"rpm\" (deb or deb-src)");
  EXPECT_EQ(ParseOneLineSources("deb [trusted=yes]\n", "/f.list").status().message(),
            "/f.list:1: a source without a URI");
}

TEST(AptSources, Deb822Paragraphs) {
  absl::StatusOr<std::vector<AptSource>> sources = ParseDeb822Sources(
      "Types: deb\n"
      "# http://snapshot.debian.org/archive/debian/20250520T000000Z\n"
      "URIs: http://deb.debian.org/debian\n"
      "Suites: bookworm bookworm-updates\n"
      "Components: main\n"
      "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"
      "\n"
      "types: deb deb-src\n"
      "uris: https://one.example/a\n"
      "  http://two.example:81/b\n"
      "Suites: x\n"
      "\n"
      "Types: deb\n"
      "URIs: http://off.example/\n"
      "Enabled: no\n"
      "\n\n"
      "Types: rpm\n"
      "URIs: http://other.example/\n",
      "/etc/apt/sources.list.d/debian.sources");
  ASSERT_TRUE(sources.ok()) << sources.status();
  EXPECT_THAT(Uris(*sources), ElementsAre("http://deb.debian.org/debian", "https://one.example/a",
                                          "http://two.example:81/b"));
  EXPECT_EQ((*sources)[0].line, 3);
  EXPECT_EQ((*sources)[2].line, 9);
}

TEST(AptSources, Deb822Errors) {
  EXPECT_EQ(ParseDeb822Sources("Types: deb\nSuites: x\n", "/d.sources").status().message(),
            "/d.sources:1: a deb822 source without URIs");
  EXPECT_EQ(ParseDeb822Sources("Types: deb\nno colon here\n", "/d.sources").status().message(),
            "/d.sources:2: not a \"Field: value\" line");
  EXPECT_EQ(ParseDeb822Sources(" folded\n", "/d.sources").status().message(),
            "/d.sources:1: a continuation line without a field");
}

TEST(AptSources, HostsAreNamesWithTheirPorts) {
  std::vector<AptSource> sources = {
      {"/s", 1, "http://deb.debian.org/debian"},
      {"/s", 2, "https://Security.Debian.org/debian-security"},
      {"/s", 3, "http://user:secret@mirror.example:8080/debian"},
      {"/s", 4, "http://deb.debian.org/debian-other"},  // the same host once
      {"/s", 5, "file:/srv/local-repo"},                // no network
      {"/s", 6, "cdrom:[Debian 12]/"},
  };
  absl::StatusOr<std::vector<std::string>> hosts = SourceHosts(sources);
  ASSERT_TRUE(hosts.ok()) << hosts.status();
  EXPECT_THAT(*hosts,
              ElementsAre("deb.debian.org:80", "mirror.example:8080", "security.debian.org:443"));
}

TEST(AptSources, HostsZygoCannotAllowAreRefused) {
  struct Case {
    const char* uri;
    const char* why;
  };
  for (const Case& c :
       {Case{"http://10.0.0.5/debian", "an IP address"},
        Case{"http://[2001:db8::1]/debian", "an IP address"},
        Case{"mirror+http://mirrors.example/list", "cannot tell"},
        Case{"tor+https://x.onion/debian", "cannot tell"},
        Case{"http://a.example:99999/", "a bad port"}, Case{"http:///debian", "no host"},
        Case{"http://bad_host!/", "not a DNS name"}}) {
    absl::StatusOr<std::vector<std::string>> hosts = SourceHosts({{"/etc/apt/x.list", 7, c.uri}});
    ASSERT_FALSE(hosts.ok()) << c.uri;
    EXPECT_THAT(hosts.status().message(), HasSubstr(absl::StrCat("/etc/apt/x.list:7: ", c.uri)));
    EXPECT_THAT(hosts.status().message(), HasSubstr(c.why));
  }
}

TEST(AptSources, ReadFromTheImageRootOnly) {
  namespace fs = std::filesystem;
  const std::string root = zygo::testing::FreshTestDir() + "/root";
  zygo::testing::WriteTestFile(root + "/etc/apt/sources.list",
                               "deb http://one.example/debian bookworm main\n");
  zygo::testing::WriteTestFile(root + "/etc/apt/sources.list.d/b.sources",
                               "Types: deb\nURIs: http://three.example/\nSuites: x\n");
  zygo::testing::WriteTestFile(root + "/etc/apt/sources.list.d/a.list",
                               "deb http://two.example/ x main\n");
  zygo::testing::WriteTestFile(root + "/etc/apt/sources.list.d/ignored.list.bak",
                               "deb http://never.example/ x main\n");
  // An absolute symlink is the image's path, resolved inside its root: this one names a
  // file the image has, never the host's file of that name.
  zygo::testing::WriteTestFile(root + "/srv/extra.list", "deb http://four.example/ x main\n");
  fs::create_symlink("/srv/extra.list", root + "/etc/apt/sources.list.d/c.list");
  // A symlink out of the root lands on a path inside it, which the image lacks.
  fs::create_symlink("/../../../../etc/hostname", root + "/etc/apt/sources.list.d/d.list");
  absl::StatusOr<std::vector<AptSource>> sources = ReadAptSources(root);
  ASSERT_TRUE(sources.ok()) << sources.status();
  EXPECT_THAT(Uris(*sources), ElementsAre("http://one.example/debian", "http://two.example/",
                                          "http://three.example/", "http://four.example/"));
  EXPECT_EQ((*sources)[2].file, "/etc/apt/sources.list.d/b.sources");
  // Control for the escaping link: the host does have the file it names.
  ASSERT_EQ(access("/etc/hostname", R_OK), 0);

  const std::string empty = zygo::testing::FreshTestDir() + "/bare";
  fs::create_directories(empty);
  absl::StatusOr<std::vector<AptSource>> none = ReadAptSources(empty);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->empty());
}

}  // namespace
}  // namespace zygo::images
