// Tables of references docker accepts and refuses, normalised the way docker does.
#include "images/reference.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zygo::images {
namespace {

using ::testing::HasSubstr;

const std::string kDigest =
    "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

struct Good {
  std::string text;
  std::string registry, repository, tag, digest;
  std::string canonical, familiar;
};

TEST(ReferenceTest, ParsesAndNormalisesGoodReferences) {
  const Good cases[] = {
      {"python", "docker.io", "library/python", "latest", "", "docker.io/library/python:latest",
       "python:latest"},
      {"python:3.12-slim", "docker.io", "library/python", "3.12-slim", "",
       "docker.io/library/python:3.12-slim", "python:3.12-slim"},
      {"library/python:3", "docker.io", "library/python", "3", "", "docker.io/library/python:3",
       "python:3"},
      {"docker.io/python", "docker.io", "library/python", "latest", "",
       "docker.io/library/python:latest", "python:latest"},
      {"index.docker.io/library/busybox", "docker.io", "library/busybox", "latest", "",
       "docker.io/library/busybox:latest", "busybox:latest"},
      {"team/app:v1", "docker.io", "team/app", "v1", "", "docker.io/team/app:v1",
       "docker.io/team/app:v1"},
      {"127.0.0.1:5000/team/app:v1", "127.0.0.1:5000", "team/app", "v1", "",
       "127.0.0.1:5000/team/app:v1", "127.0.0.1:5000/team/app:v1"},
      {"localhost/app", "localhost", "app", "latest", "", "localhost/app:latest",
       "localhost/app:latest"},
      {"localhost:5000/a/b/c:x", "localhost:5000", "a/b/c", "x", "", "localhost:5000/a/b/c:x",
       "localhost:5000/a/b/c:x"},
      {"ghcr.io/owner/image", "ghcr.io", "owner/image", "latest", "", "ghcr.io/owner/image:latest",
       "ghcr.io/owner/image:latest"},
      {"Registry.Example.com/app", "Registry.Example.com", "app", "latest", "",
       "Registry.Example.com/app:latest", "Registry.Example.com/app:latest"},
      {"[::1]:5000/app:v2", "[::1]:5000", "app", "v2", "", "[::1]:5000/app:v2",
       "[::1]:5000/app:v2"},
      // A single name is always Docker Hub, even one that looks like a host.
      {"localhost", "docker.io", "library/localhost", "latest", "",
       "docker.io/library/localhost:latest", "localhost:latest"},
      {"localhost:5000", "docker.io", "library/localhost", "5000", "",
       "docker.io/library/localhost:5000", "localhost:5000"},
      {"python@" + kDigest, "docker.io", "library/python", "", kDigest,
       "docker.io/library/python@" + kDigest, "python@" + kDigest},
      {"python:3.12@" + kDigest, "docker.io", "library/python", "3.12", kDigest,
       "docker.io/library/python:3.12@" + kDigest, "python:3.12@" + kDigest},
      {"127.0.0.1:5000/app@" + kDigest, "127.0.0.1:5000", "app", "", kDigest,
       "127.0.0.1:5000/app@" + kDigest, "127.0.0.1:5000/app@" + kDigest},
      {"team/a_b__c-d---e.f:_tag.with-dots", "docker.io", "team/a_b__c-d---e.f", "_tag.with-dots",
       "", "docker.io/team/a_b__c-d---e.f:_tag.with-dots",
       "docker.io/team/a_b__c-d---e.f:_tag.with-dots"},
      {"library/a/b", "docker.io", "library/a/b", "latest", "", "docker.io/library/a/b:latest",
       "docker.io/library/a/b:latest"},
      {"python:" + std::string(128, 'T'), "docker.io", "library/python", std::string(128, 'T'), "",
       "docker.io/library/python:" + std::string(128, 'T'), "python:" + std::string(128, 'T')},
  };
  for (const Good& c : cases) {
    SCOPED_TRACE(c.text);
    absl::StatusOr<Reference> ref = ParseReference(c.text);
    ASSERT_TRUE(ref.ok()) << ref.status();
    EXPECT_EQ(ref->registry, c.registry);
    EXPECT_EQ(ref->repository, c.repository);
    EXPECT_EQ(ref->tag, c.tag);
    EXPECT_EQ(ref->digest, c.digest);
    EXPECT_EQ(ref->Canonical(), c.canonical);
    EXPECT_EQ(ref->Familiar(), c.familiar);
    // The canonical form parses back to itself.
    absl::StatusOr<Reference> again = ParseReference(ref->Canonical());
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(again->Canonical(), c.canonical);
  }
}

struct Bad {
  std::string text;
  std::string problem;
};

TEST(ReferenceTest, RefusesBadReferencesNamingTheProblem) {
  const Bad cases[] = {
      {"", "empty"},
      {"Python", "repository names must be lowercase"},
      {"team/App:v1", "repository names must be lowercase"},
      {"python:", "invalid tag ''"},
      {"python:-x", "invalid tag '-x'"},
      {"python:.x", "invalid tag '.x'"},
      {"python:a+b", "invalid tag 'a+b'"},
      {"python:" + std::string(129, 'a'), "invalid tag"},
      {"python@sha256:abc", "has 3 hex digits, expected 64"},
      {"python@md5:d41d8cd98f00b204e9800998ecf8427e", "is not sha256"},
      {"python@" + std::string("sha256:") + std::string(64, 'A'), "lowercase hex"},
      {"python@", "is not sha256"},
      {"@" + kDigest, "repository name is empty"},
      {":tag", "repository name is empty"},
      {"ghcr.io/", "repository name is empty"},
      {"a//b", "empty path component"},
      {"team/", "empty path component"},
      {"-app", "invalid repository name component '-app'"},
      {"app_", "invalid repository name component 'app_'"},
      {"a___b", "invalid repository name component 'a___b'"},
      {"a..b", "invalid repository name component 'a..b'"},
      {"a b", "invalid repository name component 'a b'"},
      {"-bad.host:5000/app", "invalid registry '-bad.host:5000'"},
      {"bad_host.com/app", "invalid registry 'bad_host.com'"},
      {"host.com:port/app", "invalid registry 'host.com:port'"},
      {"host.com:/app", "invalid registry 'host.com:'"},
      {"[zz::1]:5000/app", "invalid registry"},
      {"ghcr.io/" + std::string(260, 'a'), "longer than 255"},
  };
  for (const Bad& c : cases) {
    SCOPED_TRACE(c.text);
    absl::StatusOr<Reference> ref = ParseReference(c.text);
    ASSERT_FALSE(ref.ok()) << ref->Canonical();
    EXPECT_EQ(ref.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(ref.status().message(),
                HasSubstr(absl::StrCat("invalid reference '", c.text, "'")));
    EXPECT_THAT(ref.status().message(), HasSubstr(c.problem));
  }
}

TEST(ReferenceTest, ErrorMessageReadsAsDocumented) {
  EXPECT_EQ(ParseReference("Python").status().message(),
            "invalid reference 'Python': repository names must be lowercase");
}

TEST(ReferenceTest, ApiHostMapsDockerHub) {
  EXPECT_EQ(ParseReference("python")->ApiHost(), "registry-1.docker.io");
  EXPECT_EQ(ParseReference("docker.io/team/app")->ApiHost(), "registry-1.docker.io");
  EXPECT_EQ(ParseReference("127.0.0.1:5000/app")->ApiHost(), "127.0.0.1:5000");
  EXPECT_EQ(ParseReference("ghcr.io/o/i")->ApiHost(), "ghcr.io");
}

TEST(ReferenceTest, KnowsTheLoopbackRegistries) {
  for (const char* loopback :
       {"localhost", "localhost:5000", "127.0.0.1:5000", "127.1.2.3", "[::1]:5000", "[::1]"}) {
    EXPECT_TRUE(IsLoopbackRegistry(loopback)) << loopback;
  }
  for (const char* remote : {"docker.io", "ghcr.io", "128.0.0.1:5000", "10.0.0.5:5000",
                             "localhost.example.com", "[::2]:5000", "127.0.0.1.nip.io"}) {
    EXPECT_FALSE(IsLoopbackRegistry(remote)) << remote;
  }
}

TEST(ReferenceTest, NamedInsecureRegistriesArePlainHttp) {
  const std::vector<std::string> insecure = {"registry.lan:5000", "build.internal", "[fd00::1]"};
  for (const char* plain :
       {"registry.lan:5000", "build.internal", "build.internal:443", "[fd00::1]:5000"}) {
    EXPECT_EQ(TlsVerifyFor(plain, insecure), TlsVerify::kFalse) << plain;
  }
  // Control: what was not named keeps docker's rule (HTTPS, loopback plain by default).
  for (const char* other : {"registry.lan", "registry.lan:5001", "build.internal.evil.com",
                            "docker.io", "127.0.0.1:5000", "[fd00::12]:5000"}) {
    EXPECT_EQ(TlsVerifyFor(other, insecure), TlsVerify::kDefault) << other;
  }
  EXPECT_EQ(TlsVerifyFor("registry.lan:5000", {}), TlsVerify::kDefault);
}

}  // namespace
}  // namespace zygo::images
