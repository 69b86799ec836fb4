// The WWW-Authenticate parser on the challenges registries really send, and on broken ones.
#include "images/internal/www_authenticate.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zygo::images::internal {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

TEST(WwwAuthenticateTest, DockerHubBearer) {
  auto challenges = ParseWwwAuthenticate(
      R"(Bearer realm="https://auth.docker.io/token",service="registry.docker.io",)"
      R"(scope="repository:library/python:pull")");
  ASSERT_TRUE(challenges.ok()) << challenges.status();
  ASSERT_EQ(challenges->size(), 1u);
  EXPECT_EQ((*challenges)[0].scheme, "bearer");
  EXPECT_THAT((*challenges)[0].params, ElementsAre(Pair("realm", "https://auth.docker.io/token"),
                                                   Pair("scope", "repository:library/python:pull"),
                                                   Pair("service", "registry.docker.io")));
}

TEST(WwwAuthenticateTest, QuotedCommasStayInTheValue) {
  auto challenges = ParseWwwAuthenticate(
      R"(Bearer realm="https://a.example/token",scope="repository:a/b:pull,push",)"
      R"(service="reg")");
  ASSERT_TRUE(challenges.ok()) << challenges.status();
  ASSERT_EQ(challenges->size(), 1u);
  EXPECT_EQ((*challenges)[0].params.at("scope"), "repository:a/b:pull,push");
  EXPECT_EQ((*challenges)[0].params.at("service"), "reg");
}

TEST(WwwAuthenticateTest, MissingScope) {
  auto challenges =
      ParseWwwAuthenticate(R"(Bearer realm="http://127.0.0.1:5001/token",service="fake")");
  ASSERT_TRUE(challenges.ok()) << challenges.status();
  ASSERT_EQ(challenges->size(), 1u);
  EXPECT_EQ((*challenges)[0].params.count("scope"), 0u);
  EXPECT_EQ((*challenges)[0].params.at("realm"), "http://127.0.0.1:5001/token");
}

TEST(WwwAuthenticateTest, Basic) {
  auto challenges = ParseWwwAuthenticate(R"(Basic realm="Registry Realm")");
  ASSERT_TRUE(challenges.ok()) << challenges.status();
  ASSERT_EQ(challenges->size(), 1u);
  EXPECT_EQ((*challenges)[0].scheme, "basic");
  EXPECT_THAT((*challenges)[0].params, ElementsAre(Pair("realm", "Registry Realm")));
}

TEST(WwwAuthenticateTest, SchemeAndNamesAreCaseInsensitive) {
  auto challenges = ParseWwwAuthenticate(R"(BEARER Realm="x", SERVICE = y)");
  ASSERT_TRUE(challenges.ok()) << challenges.status();
  EXPECT_EQ((*challenges)[0].scheme, "bearer");
  EXPECT_THAT((*challenges)[0].params, ElementsAre(Pair("realm", "x"), Pair("service", "y")));
}

TEST(WwwAuthenticateTest, SeveralChallenges) {
  auto challenges = ParseWwwAuthenticate(
      R"(Basic realm="a, b", Bearer realm="https://t.example/token",scope="s", Negotiate)");
  ASSERT_TRUE(challenges.ok()) << challenges.status();
  ASSERT_EQ(challenges->size(), 3u);
  EXPECT_EQ((*challenges)[0].scheme, "basic");
  EXPECT_EQ((*challenges)[0].params.at("realm"), "a, b");
  EXPECT_EQ((*challenges)[1].scheme, "bearer");
  EXPECT_EQ((*challenges)[1].params.at("scope"), "s");
  EXPECT_EQ((*challenges)[2].scheme, "negotiate");
  EXPECT_TRUE((*challenges)[2].params.empty());
}

TEST(WwwAuthenticateTest, EscapesInQuotedStrings) {
  auto challenges = ParseWwwAuthenticate(R"(Basic realm="say \"hi\" \\ there")");
  ASSERT_TRUE(challenges.ok()) << challenges.status();
  EXPECT_EQ((*challenges)[0].params.at("realm"), R"(say "hi" \ there)");
}

TEST(WwwAuthenticateTest, Token68) {
  auto challenges = ParseWwwAuthenticate("Negotiate abc+/d==, Basic realm=r");
  ASSERT_TRUE(challenges.ok()) << challenges.status();
  ASSERT_EQ(challenges->size(), 2u);
  EXPECT_EQ((*challenges)[0].token68, "abc+/d==");
  EXPECT_EQ((*challenges)[1].params.at("realm"), "r");
}

TEST(WwwAuthenticateTest, DuplicateParameterKeepsTheFirst) {
  auto challenges = ParseWwwAuthenticate(R"(Bearer realm="first",realm="second")");
  ASSERT_TRUE(challenges.ok()) << challenges.status();
  EXPECT_EQ((*challenges)[0].params.at("realm"), "first");
}

TEST(WwwAuthenticateTest, MalformedHeadersAreErrors) {
  for (const char* header : {"", "  ,  ", R"(Bearer realm="unterminated)", R"(Bearer realm="a"x)",
                             R"(Bearer realm="a" scope="b")", R"("quoted" realm=a)", "Bearer =x"}) {
    auto challenges = ParseWwwAuthenticate(header);
    EXPECT_FALSE(challenges.ok()) << header;
    EXPECT_EQ(challenges.status().code(), absl::StatusCode::kInvalidArgument) << header;
    EXPECT_THAT(challenges.status().message(), HasSubstr("invalid WWW-Authenticate header"));
  }
}

}  // namespace
}  // namespace zygo::images::internal
