// The registry client against real registries: Debian's docker-registry (the CNCF
// distribution server) on 127.0.0.1 from testing/registry/serve, in anonymous, Basic
// (htpasswd) and Bearer (token server) modes, with a small image pushed by skopeo.
#include "images/registry_client.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "images/digest.h"
#include "images/reference.h"
#include "nlohmann/json.hpp"

namespace zygo::images {
namespace {

using ::testing::HasSubstr;

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

// Runs argv (no shell) and collects its output.
CommandResult Run(const std::vector<std::string>& argv) {
  CommandResult result;
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return result;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(pipe_fds[1], 1);
    dup2(pipe_fds[1], 2);
    std::vector<char*> args;
    for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(pipe_fds[1]);
  char buffer[4096];
  ssize_t n;
  while ((n = read(pipe_fds[0], buffer, sizeof(buffer))) > 0) result.output.append(buffer, n);
  close(pipe_fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

CommandResult Shell(const std::string& script) { return Run({"/bin/sh", "-ec", script}); }

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream content;
  content << in.rdbuf();
  return content.str();
}

bool FileExists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

// A registry from testing/registry/serve (docker-registry on 127.0.0.1; see its README).
struct ServedRegistry {
  std::string address;  // 127.0.0.1:PORT
  std::string dir;      // its state; blobs under storage/
  Credentials credentials;
};

std::string Runfile(const std::string& path) {
  return absl::StrCat(getenv("TEST_SRCDIR"), "/", getenv("TEST_WORKSPACE"), "/", path);
}

// `serve MODE` prints one line of KEY=VALUE words; the registry is stopped by
// StopRegistries (or by serve's watcher, should this test crash).
std::optional<ServedRegistry> Serve(const std::string& mode) {
  CommandResult serve =
      Run({Runfile("testing/registry/serve"), mode, "--watch", absl::StrCat(getpid())});
  if (serve.exit_code != 0) {
    ADD_FAILURE() << "testing/registry/serve " << mode << ": " << serve.output;
    return std::nullopt;
  }
  ServedRegistry registry;
  for (absl::string_view line : absl::StrSplit(serve.output, '\n')) {
    if (!absl::StartsWith(line, "REGISTRY=")) continue;
    for (absl::string_view word : absl::StrSplit(line, ' ')) {
      std::pair<std::string, std::string> kv = absl::StrSplit(word, absl::MaxSplits('=', 1));
      if (kv.first == "REGISTRY") registry.address = kv.second;
      if (kv.first == "DIR") registry.dir = kv.second;
      if (kv.first == "CREDS" && !kv.second.empty()) {
        std::pair<std::string, std::string> up = absl::StrSplit(kv.second, absl::MaxSplits(':', 1));
        registry.credentials = {up.first, up.second};
      }
    }
  }
  if (registry.address.empty() || registry.dir.empty()) {
    ADD_FAILURE() << "unexpected output of serve: " << serve.output;
    return std::nullopt;
  }
  return registry;
}

// Builds a one-layer OCI layout (tag "v1") in `dir`; `text` goes into /etc/hello.txt, so
// different texts give different layer blobs.
bool BuildOciLayout(const std::string& dir, const std::string& text) {
  CommandResult result = Shell(absl::StrCat(R"(
    dir=')",
                                            dir, R"('; text=')", text, R"('
    mkdir -p "$dir/rootfs/etc" "$dir/blobs/sha256"; cd "$dir"
    printf '%s\n' "$text" > rootfs/etc/hello.txt
    tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C rootfs -cf layer.tar .
    diff_id=$(sha256sum layer.tar | cut -d' ' -f1)
    gzip -n -f layer.tar
    layer=$(sha256sum layer.tar.gz | cut -d' ' -f1); layer_size=$(stat -c %s layer.tar.gz)
    mv layer.tar.gz "blobs/sha256/$layer"
    printf '{"architecture":"amd64","os":"linux","config":{"Env":["PATH=/bin"]},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' "$diff_id" > config.json
    config=$(sha256sum config.json | cut -d' ' -f1); config_size=$(stat -c %s config.json)
    mv config.json "blobs/sha256/$config"
    printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"sha256:%s","size":%s}]}' "$config" "$config_size" "$layer" "$layer_size" > manifest.json
    manifest=$(sha256sum manifest.json | cut -d' ' -f1); manifest_size=$(stat -c %s manifest.json)
    mv manifest.json "blobs/sha256/$manifest"
    printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"annotations":{"org.opencontainers.image.ref.name":"v1"}}]}' "$manifest" "$manifest_size" > index.json
    printf '{"imageLayoutVersion":"1.0.0"}' > oci-layout
  )"));
  if (result.exit_code != 0) ADD_FAILURE() << "building the OCI layout: " << result.output;
  return result.exit_code == 0;
}

// testing/registry/push of `layout`'s tag v1; returns the digest it reports.
std::string Push(const std::string& layout, const ServedRegistry& registry,
                 const std::string& name) {
  std::vector<std::string> argv = {Runfile("testing/registry/push"), layout + ":v1",
                                   absl::StrCat(registry.address, "/", name, ":v1")};
  if (!registry.credentials.username.empty()) {
    argv.push_back("--creds");
    argv.push_back(absl::StrCat(registry.credentials.username, ":", registry.credentials.password));
  }
  CommandResult push = Run(argv);
  size_t at = push.output.find("DIGEST=");
  if (push.exit_code != 0 || at == std::string::npos) {
    ADD_FAILURE() << "testing/registry/push: " << push.output;
    return "";
  }
  return std::string(absl::StripAsciiWhitespace(push.output.substr(at + 7, 71)));
}

std::string TestTmpDir() { return getenv("TEST_TMPDIR"); }

Reference MakeRef(const std::string& registry, const std::string& repository) {
  Reference ref;
  ref.registry = registry;
  ref.repository = repository;
  ref.tag = "v1";
  return ref;
}

struct Blob {
  std::string digest;
  int64_t size = 0;
};

// The config and layer descriptors of a manifest.
std::vector<Blob> BlobsOf(const std::string& manifest) {
  nlohmann::json json = nlohmann::json::parse(manifest);
  std::vector<Blob> blobs = {{json["config"]["digest"], json["config"]["size"]}};
  for (const auto& layer : json["layers"]) blobs.push_back({layer["digest"], layer["size"]});
  return blobs;
}

// One registry per mode for the whole binary, each with test/hello:v1 pushed; all stopped
// at the end.
class Registries : public ::testing::Environment {
 public:
  static const ServedRegistry* Get(const std::string& mode) {
    static std::map<std::string, std::optional<ServedRegistry>>& started = Started();
    auto it = started.find(mode);
    if (it != started.end()) return it->second ? &*it->second : nullptr;
    std::optional<ServedRegistry>& registry = started[mode];
    registry = Serve(mode);
    if (!registry || !BuildOnce() || Push(Layout(), *registry, "test/hello").empty()) {
      return nullptr;
    }
    return &*registry;
  }

  static std::string Layout() { return TestTmpDir() + "/layout"; }

  void TearDown() override {
    for (auto& [mode, registry] : Started()) {
      if (!registry) continue;
      CommandResult stop = Run({Runfile("testing/registry/stop"), registry->dir});
      EXPECT_EQ(stop.exit_code, 0) << stop.output;
    }
    Started().clear();
  }

 private:
  static std::map<std::string, std::optional<ServedRegistry>>& Started() {
    static auto* started = new std::map<std::string, std::optional<ServedRegistry>>();
    return *started;
  }

  static bool BuildOnce() {
    static bool built = BuildOciLayout(Layout(), "hello from zygo");
    return built;
  }
};

const ::testing::Environment* const kRegistries =
    ::testing::AddGlobalTestEnvironment(new Registries);

// What every mode must do: anonymous, basic (with the credentials) and bearer (anonymous
// pull tokens, and tokens for the credentials).
struct Mode {
  std::string name;
  bool with_credentials;
};

class RegistryClientTest : public ::testing::TestWithParam<Mode> {
 protected:
  void SetUp() override {
    registry_ = Registries::Get(GetParam().name);
    ASSERT_NE(registry_, nullptr);
    options_.insecure_registries = {registry_->address};
    if (GetParam().with_credentials) {
      options_.credentials[registry_->address] = registry_->credentials;
    }
    ref_ = MakeRef(registry_->address, "test/hello");
  }

  std::string Dest(const std::string& name) const {
    return absl::StrCat(TestTmpDir(), "/", GetParam().name, GetParam().with_credentials, "-", name);
  }

  const ServedRegistry* registry_ = nullptr;
  RegistryOptions options_;
  Reference ref_;
};

TEST_P(RegistryClientTest, ManifestByTagHasTheDigestSkopeoSees) {
  RegistryClient client(options_);
  auto manifest = client.GetManifest(ref_, "v1");
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  EXPECT_EQ(manifest->media_type, "application/vnd.oci.image.manifest.v1+json");
  EXPECT_EQ(BlobsOf(manifest->bytes).size(), 2u);
  std::string creds = registry_->credentials.username.empty()
                          ? ""
                          : absl::StrCat(" --creds ", registry_->credentials.username, ":",
                                         registry_->credentials.password);
  CommandResult skopeo =
      Shell(absl::StrCat("skopeo inspect --raw --tls-verify=false", creds, " docker://",
                         registry_->address, "/test/hello:v1 | sha256sum | cut -d' ' -f1"));
  ASSERT_EQ(skopeo.exit_code, 0) << skopeo.output;
  EXPECT_EQ(manifest->digest, "sha256:" + std::string(absl::StripAsciiWhitespace(skopeo.output)));
}

TEST_P(RegistryClientTest, ManifestByDigest) {
  RegistryClient client(options_);
  auto by_tag = client.GetManifest(ref_, "v1");
  ASSERT_TRUE(by_tag.ok()) << by_tag.status();
  auto by_digest = client.GetManifest(ref_, by_tag->digest);
  ASSERT_TRUE(by_digest.ok()) << by_digest.status();
  EXPECT_EQ(by_digest->bytes, by_tag->bytes);
  EXPECT_EQ(by_digest->digest, by_tag->digest);
}

TEST_P(RegistryClientTest, UnknownTagIsNotFoundNamingTheTag) {
  RegistryClient client(options_);
  auto manifest = client.GetManifest(ref_, "no-such-tag");
  EXPECT_EQ(manifest.status().code(), absl::StatusCode::kNotFound) << manifest.status();
  EXPECT_THAT(manifest.status().message(), HasSubstr("manifest unknown"));
  EXPECT_THAT(manifest.status().message(), HasSubstr("test/hello:no-such-tag"));
}

TEST_P(RegistryClientTest, DownloadsAndVerifiesConfigAndLayer) {
  RegistryClient client(options_);
  auto manifest = client.GetManifest(ref_, "v1");
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  for (const Blob& blob : BlobsOf(manifest->bytes)) {
    std::string dest = Dest("download-" + DigestHex(blob.digest));
    int64_t last_done = -1;
    int64_t last_total = 0;
    absl::Status status =
        client.DownloadBlob(ref_, blob.digest, blob.size, dest, [&](int64_t done, int64_t total) {
          last_done = done;
          last_total = total;
        });
    ASSERT_TRUE(status.ok()) << status;
    EXPECT_EQ(ReadAll(dest),
              ReadAll(Registries::Layout() + "/blobs/sha256/" + DigestHex(blob.digest)));
    auto on_disk = Sha256DigestOfFile(dest);
    ASSERT_TRUE(on_disk.ok()) << on_disk.status();
    EXPECT_EQ(*on_disk, blob.digest);
    EXPECT_EQ(last_done, blob.size);
    EXPECT_EQ(last_total, blob.size);
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, RegistryClientTest,
                         ::testing::Values(Mode{"anonymous", false}, Mode{"basic", true},
                                           Mode{"bearer", false}, Mode{"bearer", true}),
                         [](const ::testing::TestParamInfo<Mode>& info) {
                           return info.param.name +
                                  (info.param.with_credentials ? "WithLogin" : "");
                         });

class RegistryClientAnonymousTest : public ::testing::Test {
 protected:
  void SetUp() override {
    registry_ = Registries::Get("anonymous");
    ASSERT_NE(registry_, nullptr);
    options_.insecure_registries = {registry_->address};
    ref_ = MakeRef(registry_->address, "test/hello");
  }

  const ServedRegistry* registry_ = nullptr;
  RegistryOptions options_;
  Reference ref_;
};

TEST_F(RegistryClientAnonymousTest, UnknownRepositoryIsNotFound) {
  RegistryClient client(options_);
  auto manifest = client.GetManifest(MakeRef(registry_->address, "test/nothing"), "v1");
  EXPECT_EQ(manifest.status().code(), absl::StatusCode::kNotFound);
}

TEST_F(RegistryClientAnonymousTest, PushedDigestIsTheManifestDigest) {
  RegistryClient client(options_);
  auto manifest = client.GetManifest(ref_, "v1");
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  EXPECT_EQ(Push(Registries::Layout(), *registry_, "test/hello"), manifest->digest);
}

TEST_F(RegistryClientAnonymousTest, WrongSizeIsDataLossAndLeavesNoFile) {
  RegistryClient client(options_);
  auto manifest = client.GetManifest(ref_, "v1");
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  Blob layer = BlobsOf(manifest->bytes)[1];
  std::string dest = TestTmpDir() + "/wrong-size";
  for (int64_t size : {layer.size - 1, layer.size + 1}) {
    absl::Status status = client.DownloadBlob(ref_, layer.digest, size, dest);
    EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
    EXPECT_FALSE(FileExists(dest));
  }
}

TEST_F(RegistryClientAnonymousTest, UnknownBlobIsNotFoundAndLeavesNoFile) {
  RegistryClient client(options_);
  std::string dest = TestTmpDir() + "/unknown-blob";
  absl::Status status = client.DownloadBlob(ref_, Sha256Digest("not pushed"), 10, dest);
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound) << status;
  EXPECT_FALSE(FileExists(dest));
}

// The registry's storage is corrupted on disk (same size, other bytes): the client must
// notice while streaming, report DataLoss and keep nothing.
TEST_F(RegistryClientAnonymousTest, CorruptedBlobIsDataLossAndLeavesNoFile) {
  std::string layout = TestTmpDir() + "/corrupt-layout";
  ASSERT_TRUE(BuildOciLayout(layout, "this layer will be corrupted"));
  ASSERT_FALSE(Push(layout, *registry_, "test/corrupt").empty());
  Reference ref = MakeRef(registry_->address, "test/corrupt");
  RegistryClient client(options_);
  auto manifest = client.GetManifest(ref, "v1");
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  Blob layer = BlobsOf(manifest->bytes)[1];
  std::string hex = DigestHex(layer.digest);
  std::string data = absl::StrCat(registry_->dir, "/storage/docker/registry/v2/blobs/sha256/",
                                  hex.substr(0, 2), "/", hex, "/data");
  std::string bytes = ReadAll(data);
  ASSERT_EQ(static_cast<int64_t>(bytes.size()), layer.size);
  bytes[bytes.size() / 2] ^= 0x55;
  std::ofstream(data, std::ios::binary | std::ios::trunc) << bytes;

  std::string dest = TestTmpDir() + "/corrupt-blob";
  absl::Status status = client.DownloadBlob(ref, layer.digest, layer.size, dest);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
  EXPECT_THAT(status.message(), HasSubstr(layer.digest));
  EXPECT_FALSE(FileExists(dest));
}

TEST(RegistryClientBasicAuthTest, WithoutCredentialsSaysZygoLogin) {
  const ServedRegistry* registry = Registries::Get("basic");
  ASSERT_NE(registry, nullptr);
  RegistryOptions options;
  options.insecure_registries = {registry->address};
  RegistryClient client(options);
  auto manifest = client.GetManifest(MakeRef(registry->address, "test/hello"), "v1");
  EXPECT_EQ(manifest.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(manifest.status().message(), HasSubstr("zygo login " + registry->address));
}

// Wrong credentials: refused by the registry itself (basic) or by its token server (bearer).
TEST(RegistryClientAuthTest, WrongPasswordIsUnauthenticated) {
  for (const char* mode : {"basic", "bearer"}) {
    const ServedRegistry* registry = Registries::Get(mode);
    ASSERT_NE(registry, nullptr);
    RegistryOptions options;
    options.insecure_registries = {registry->address};
    options.credentials[registry->address] = {registry->credentials.username, "wrong"};
    RegistryClient client(options);
    auto manifest = client.GetManifest(MakeRef(registry->address, "test/hello"), "v1");
    EXPECT_EQ(manifest.status().code(), absl::StatusCode::kUnauthenticated) << mode;
    EXPECT_THAT(manifest.status().message(),
                HasSubstr("rejected the credentials of " + registry->credentials.username));
    EXPECT_THAT(manifest.status().message(), HasSubstr("zygo login " + registry->address));
  }
}

}  // namespace
}  // namespace zygo::images
