// LoadCredentials and SaveCredentials on files in a temporary HOME: Zygo's own auth.json
// (written 0600 in a 0700 directory, atomically), docker's config.json and containers'
// auth.json (read only).
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "images/registry_client.h"
#include "nlohmann/json.hpp"

namespace zygo::images {
namespace {

using ::testing::HasSubstr;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream content;
  content << in.rdbuf();
  return content.str();
}

void WriteFile(const std::string& path, const std::string& content) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << content;
}

mode_t ModeOf(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return 0;
  return st.st_mode & 07777;
}

std::string Auth(const std::string& user, const std::string& password) {
  return absl::Base64Escape(absl::StrCat(user, ":", password));
}

// Each test gets a fresh HOME and none of the variables that point elsewhere.
class RegistryCredentialsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    home_ = absl::StrCat(getenv("TEST_TMPDIR"), "/home-", info->name());
    std::filesystem::remove_all(home_);
    std::filesystem::create_directories(home_);
    for (const char* name :
         {"HOME", "XDG_CONFIG_HOME", "DOCKER_CONFIG", "REGISTRY_AUTH_FILE", "XDG_RUNTIME_DIR"}) {
      const char* value = getenv(name);
      saved_.emplace_back(name,
                          value != nullptr ? std::optional<std::string>(value) : std::nullopt);
      unsetenv(name);
    }
    setenv("HOME", home_.c_str(), 1);
  }

  void TearDown() override {
    for (const auto& [name, value] : saved_) {
      if (value.has_value()) {
        setenv(name.c_str(), value->c_str(), 1);
      } else {
        unsetenv(name.c_str());
      }
    }
  }

  std::string home_;
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

TEST_F(RegistryCredentialsTest, NothingConfiguredIsEmpty) {
  auto credentials = LoadCredentials();
  ASSERT_TRUE(credentials.ok()) << credentials.status();
  EXPECT_TRUE(credentials->empty());
}

TEST_F(RegistryCredentialsTest, SaveWritesPrivateFileUnderXdgConfigHome) {
  std::string xdg = home_ + "/xdg";
  setenv("XDG_CONFIG_HOME", xdg.c_str(), 1);
  ASSERT_TRUE(SaveCredentials("127.0.0.1:5000", {"alice", "s3cret:with:colons"}).ok());
  std::string path = xdg + "/zygo/auth.json";
  EXPECT_EQ(ModeOf(path), 0600u);
  EXPECT_EQ(ModeOf(xdg + "/zygo"), 0700u);
  nlohmann::json json = nlohmann::json::parse(ReadAll(path));
  EXPECT_EQ(json["auths"]["127.0.0.1:5000"]["auth"], Auth("alice", "s3cret:with:colons"));

  auto credentials = LoadCredentials();
  ASSERT_TRUE(credentials.ok()) << credentials.status();
  ASSERT_EQ(credentials->count("127.0.0.1:5000"), 1u);
  EXPECT_EQ(credentials->at("127.0.0.1:5000").username, "alice");
  EXPECT_EQ(credentials->at("127.0.0.1:5000").password, "s3cret:with:colons");
}

TEST_F(RegistryCredentialsTest, SaveDefaultsToDotConfigAndKeepsOtherRegistries) {
  ASSERT_TRUE(SaveCredentials("a.example", {"one", "1"}).ok());
  ASSERT_TRUE(SaveCredentials("b.example", {"two", "2"}).ok());
  ASSERT_TRUE(SaveCredentials("a.example", {"three", "3"}).ok());  // replaces
  std::string dir = home_ + "/.config/zygo";
  EXPECT_EQ(ModeOf(dir + "/auth.json"), 0600u);
  // Nothing but auth.json: the temp files were renamed away.
  int entries = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    EXPECT_EQ(entry.path().filename(), "auth.json");
    ++entries;
  }
  EXPECT_EQ(entries, 1);
  auto credentials = LoadCredentials();
  ASSERT_TRUE(credentials.ok()) << credentials.status();
  EXPECT_EQ(credentials->at("a.example").username, "three");
  EXPECT_EQ(credentials->at("b.example").username, "two");
}

TEST_F(RegistryCredentialsTest, SaveTightensAnExistingDirectory) {
  std::filesystem::create_directories(home_ + "/.config/zygo");
  chmod((home_ + "/.config/zygo").c_str(), 0755);
  ASSERT_TRUE(SaveCredentials("a.example", {"one", "1"}).ok());
  EXPECT_EQ(ModeOf(home_ + "/.config/zygo"), 0700u);
}

TEST_F(RegistryCredentialsTest, SaveMapsDockerHubNames) {
  ASSERT_TRUE(SaveCredentials("https://index.docker.io/v1/", {"hub", "pw"}).ok());
  auto credentials = LoadCredentials();
  ASSERT_TRUE(credentials.ok()) << credentials.status();
  EXPECT_EQ(credentials->count("docker.io"), 1u);
}

TEST_F(RegistryCredentialsTest, SaveRefusesBadInput) {
  EXPECT_EQ(SaveCredentials("", {"u", "p"}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SaveCredentials("a.example", {"", "p"}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SaveCredentials("a.example", {"a:b", "p"}).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(RegistryCredentialsTest, ReadsDockerConfigFromDockerConfigDir) {
  std::string docker = home_ + "/docker-config";
  setenv("DOCKER_CONFIG", docker.c_str(), 1);
  WriteFile(docker + "/config.json", absl::StrCat(R"({
    "auths": {
      "https://index.docker.io/v1/": {"auth": ")",
                                                  Auth("hubuser", "hubpass"), R"("},
      "127.0.0.1:5000": {"auth": ")",
                                                  Auth("local", "pw"), R"("},
      "ghcr.io": {},
      "quay.io": {"identitytoken": "abc"}
    },
    "credsStore": "desktop",
    "credHelpers": {"gcr.io": "gcloud"}
  })"));
  auto credentials = LoadCredentials();
  ASSERT_TRUE(credentials.ok()) << credentials.status();
  EXPECT_EQ(credentials->size(), 2u);
  ASSERT_EQ(credentials->count("docker.io"), 1u);
  EXPECT_EQ(credentials->at("docker.io").username, "hubuser");
  EXPECT_EQ(credentials->at("docker.io").password, "hubpass");
  EXPECT_EQ(credentials->at("127.0.0.1:5000").username, "local");
}

TEST_F(RegistryCredentialsTest, ReadsDockerConfigFromHome) {
  WriteFile(home_ + "/.docker/config.json",
            absl::StrCat(R"({"auths":{"a.example":{"auth":")", Auth("u", "p"), R"("}}})"));
  auto credentials = LoadCredentials();
  ASSERT_TRUE(credentials.ok()) << credentials.status();
  EXPECT_EQ(credentials->at("a.example").username, "u");
}

TEST_F(RegistryCredentialsTest, ReadsContainersAuthFiles) {
  std::string runtime = home_ + "/run";
  setenv("XDG_RUNTIME_DIR", runtime.c_str(), 1);
  WriteFile(runtime + "/containers/auth.json",
            absl::StrCat(R"({"auths":{"a.example":{"auth":")", Auth("runtime", "p"), R"("}}})"));
  auto credentials = LoadCredentials();
  ASSERT_TRUE(credentials.ok()) << credentials.status();
  EXPECT_EQ(credentials->at("a.example").username, "runtime");

  std::string file = home_ + "/explicit-auth.json";
  setenv("REGISTRY_AUTH_FILE", file.c_str(), 1);
  WriteFile(file, absl::StrCat(R"({"auths":{"b.example/team":{"auth":")", Auth("explicit", "p"),
                               R"("}}})"));
  credentials = LoadCredentials();
  ASSERT_TRUE(credentials.ok()) << credentials.status();
  EXPECT_EQ(credentials->count("a.example"), 0u) << "REGISTRY_AUTH_FILE replaces the default";
  EXPECT_EQ(credentials->at("b.example").username, "explicit");
}

TEST_F(RegistryCredentialsTest, ZygoOwnCredentialsWinOverDockers) {
  WriteFile(home_ + "/.docker/config.json",
            absl::StrCat(R"({"auths":{"a.example":{"auth":")", Auth("docker", "p"), R"("}}})"));
  ASSERT_TRUE(SaveCredentials("a.example", {"zygo", "p"}).ok());
  auto credentials = LoadCredentials();
  ASSERT_TRUE(credentials.ok()) << credentials.status();
  EXPECT_EQ(credentials->at("a.example").username, "zygo");
}

TEST_F(RegistryCredentialsTest, BrokenFilesAreErrorsNamingTheFile) {
  std::string path = home_ + "/.docker/config.json";
  WriteFile(path, R"({"auths":{"a.example":{"auth":"not base64!"}}})");
  auto credentials = LoadCredentials();
  EXPECT_EQ(credentials.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(credentials.status().message(), HasSubstr(path));
  WriteFile(path, "{ not json");
  credentials = LoadCredentials();
  EXPECT_EQ(credentials.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(credentials.status().message(), HasSubstr(path));
}

}  // namespace
}  // namespace zygo::images
