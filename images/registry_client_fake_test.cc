// The registry client against a scripted HTTP server on 127.0.0.1: the Bearer token
// exchange, redirects that must not carry credentials to another origin, the Accept
// header, status mapping, and digests or sizes that do not match what was asked for.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "images/digest.h"
#include "images/manifest.h"
#include "images/reference.h"
#include "images/registry_client.h"

namespace zygo::images {
namespace {

using ::testing::HasSubstr;

struct HttpRequest {
  std::string path;                            // with the query
  std::map<std::string, std::string> headers;  // names lowercased
  std::string Header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
};

struct HttpResponse {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

// A one-connection-at-a-time HTTP/1.1 server on 127.0.0.1 that answers through `handler`
// and records every request. Each answer closes its connection.
class FakeHttpServer {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&)>;

  FakeHttpServer() {
    listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (listen_fd_ < 0 || bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        listen(listen_fd_, 16) != 0 ||
        getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      ADD_FAILURE() << "cannot listen on 127.0.0.1";
      return;
    }
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }

  ~FakeHttpServer() {
    stopping_ = true;
    if (thread_.joinable()) thread_.join();
    if (listen_fd_ >= 0) close(listen_fd_);
  }

  void SetHandler(Handler handler) {
    std::lock_guard<std::mutex> lock(mu_);
    handler_ = std::move(handler);
  }

  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }

  std::vector<HttpRequest> requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

  // Requests whose path starts with `prefix`.
  std::vector<HttpRequest> RequestsTo(const std::string& prefix) const {
    std::vector<HttpRequest> matching;
    for (const HttpRequest& request : requests()) {
      if (absl::StartsWith(request.path, prefix)) matching.push_back(request);
    }
    return matching;
  }

 private:
  void Serve() {
    while (!stopping_) {
      pollfd pfd{listen_fd_, POLLIN, 0};
      if (poll(&pfd, 1, 50) <= 0) continue;
      int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      HandleConnection(fd);
      close(fd);
    }
  }

  void HandleConnection(int fd) {
    std::string data;
    char buffer[4096];
    while (!absl::StrContains(data, "\r\n\r\n")) {
      pollfd pfd{fd, POLLIN, 0};
      if (poll(&pfd, 1, 2000) <= 0) return;
      ssize_t n = read(fd, buffer, sizeof(buffer));
      if (n <= 0) return;
      data.append(buffer, n);
    }
    HttpRequest request;
    std::vector<std::string> lines = absl::StrSplit(data.substr(0, data.find("\r\n\r\n")), "\r\n");
    std::vector<std::string> request_line = absl::StrSplit(lines[0], ' ');
    if (request_line.size() < 2) return;  // not HTTP (a TLS hello, say)
    request.path = request_line[1];
    for (size_t i = 1; i < lines.size(); ++i) {
      size_t colon = lines[i].find(':');
      if (colon == std::string::npos) continue;
      request.headers[absl::AsciiStrToLower(lines[i].substr(0, colon))] =
          std::string(absl::StripAsciiWhitespace(lines[i].substr(colon + 1)));
    }
    Handler handler;
    {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back(request);
      handler = handler_;
    }
    HttpResponse response = handler ? handler(request) : HttpResponse{404, {}, ""};
    std::string out =
        absl::StrCat("HTTP/1.1 ", response.status, " X\r\nContent-Length: ", response.body.size(),
                     "\r\nConnection: close\r\n");
    for (const auto& [name, value] : response.headers)
      absl::StrAppend(&out, name, ": ", value, "\r\n");
    absl::StrAppend(&out, "\r\n", response.body);
    for (size_t done = 0; done < out.size();) {
      ssize_t n = send(fd, out.data() + done, out.size() - done, MSG_NOSIGNAL);
      if (n <= 0) return;
      done += n;
    }
  }

  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
  mutable std::mutex mu_;
  Handler handler_;
  std::vector<HttpRequest> requests_;
};

constexpr char kRepository[] = "test/app";
constexpr char kOciManifestType[] = "application/vnd.oci.image.manifest.v1+json";

std::string TempDir() { return getenv("TEST_TMPDIR"); }

bool FileExists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

std::string ReadAll(const std::string& path) {
  std::string content;
  FILE* file = fopen(path.c_str(), "rb");
  if (file == nullptr) return content;
  char buffer[65536];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), file)) > 0) content.append(buffer, n);
  fclose(file);
  return content;
}

HttpResponse Json(int status, const std::string& body) {
  return {status, {{"Content-Type", "application/json"}}, body};
}

HttpResponse Unauthorized(const std::string& challenge) {
  return {401,
          {{"WWW-Authenticate", challenge}, {"Content-Type", "application/json"}},
          R"({"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]})"};
}

// A registry (`registry_`) that wants Bearer tokens from its own /token endpoint and
// redirects blobs to a "CDN" (`cdn_`) on another port; tests adjust the knobs.
class RegistryClientFakeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    manifest_ = R"({"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json"})";
    blob_ = std::string(300000, 'x') + "end";
    blob_digest_ = Sha256Digest(blob_);
    ref_.registry = registry_.address();
    ref_.repository = kRepository;
    ref_.tag = "v1";
    options_.insecure_registries = {registry_.address()};
    registry_.SetHandler([this](const HttpRequest& request) { return Registry(request); });
    cdn_.SetHandler([this](const HttpRequest& request) -> HttpResponse {
      if (request.path == "/cdn/" + blob_digest_) return {200, {}, blob_};
      return {404, {}, ""};
    });
  }

  std::string Challenge() const {
    std::string challenge =
        absl::StrCat(R"(Bearer realm="http://)", registry_.address(), R"(/token",service="fake")");
    if (challenge_scope_) absl::StrAppend(&challenge, R"(,scope="repository:test/app:pull")");
    return challenge;
  }

  HttpResponse Registry(const HttpRequest& request) {
    if (absl::StartsWith(request.path, "/token")) return token_answer_(request);
    if (!basic_mode_ && request.Header("authorization") != "Bearer tok-1") {
      return Unauthorized(Challenge());
    }
    if (basic_mode_ &&
        request.Header("authorization") != "Basic " + absl::Base64Escape("alice:secret")) {
      return Unauthorized(R"(Basic realm="fake")");
    }
    if (request.path == "/v2/test/app/manifests/v1" ||
        request.path == "/v2/test/app/manifests/" + Sha256Digest(manifest_)) {
      return {200, {{"Content-Type", kOciManifestType}}, manifest_};
    }
    if (request.path == "/v2/test/app/blobs/" + blob_digest_) {
      if (!redirect_blobs_) return {200, {}, blob_};
      return {
          307, {{"Location", absl::StrCat("http://", cdn_.address(), "/cdn/", blob_digest_)}}, ""};
    }
    return Json(404, R"({"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown"}]})");
  }

  FakeHttpServer registry_;
  FakeHttpServer cdn_;
  RegistryOptions options_;
  Reference ref_;
  std::string manifest_;
  std::string blob_;
  std::string blob_digest_;
  bool challenge_scope_ = true;
  bool basic_mode_ = false;
  bool redirect_blobs_ = true;
  std::function<HttpResponse(const HttpRequest&)> token_answer_ = [](const HttpRequest&) {
    return Json(200, R"({"token":"tok-1","expires_in":300})");
  };
};

TEST_F(RegistryClientFakeTest, BearerTokenIsFetchedOnceAndReused) {
  RegistryClient client(options_);
  for (int i = 0; i < 3; ++i) {
    auto manifest = client.GetManifest(ref_, "v1");
    ASSERT_TRUE(manifest.ok()) << manifest.status();
    EXPECT_EQ(manifest->bytes, manifest_);
    EXPECT_EQ(manifest->media_type, kOciManifestType);
    EXPECT_EQ(manifest->digest, Sha256Digest(manifest_));
  }
  std::vector<HttpRequest> tokens = registry_.RequestsTo("/token");
  ASSERT_EQ(tokens.size(), 1u);
  EXPECT_EQ(tokens[0].path, "/token?service=fake&scope=repository%3Atest%2Fapp%3Apull");
  EXPECT_EQ(tokens[0].Header("authorization"), "") << "anonymous client sent credentials";
  // One 401, then three requests with the token.
  std::vector<HttpRequest> manifests = registry_.RequestsTo("/v2/");
  ASSERT_EQ(manifests.size(), 4u);
  EXPECT_EQ(manifests[0].Header("authorization"), "");
  for (size_t i = 1; i < manifests.size(); ++i) {
    EXPECT_EQ(manifests[i].Header("authorization"), "Bearer tok-1");
  }
}

TEST_F(RegistryClientFakeTest, TokenRequestCarriesBasicCredentialsWhenConfigured) {
  options_.credentials[registry_.address()] = {"alice", "secret"};
  RegistryClient client(options_);
  ASSERT_TRUE(client.GetManifest(ref_, "v1").ok());
  std::vector<HttpRequest> tokens = registry_.RequestsTo("/token");
  ASSERT_EQ(tokens.size(), 1u);
  EXPECT_EQ(tokens[0].Header("authorization"), "Basic " + absl::Base64Escape("alice:secret"));
}

TEST_F(RegistryClientFakeTest, ChallengeWithoutScopeAsksForRepositoryPull) {
  challenge_scope_ = false;
  RegistryClient client(options_);
  ASSERT_TRUE(client.GetManifest(ref_, "v1").ok());
  std::vector<HttpRequest> tokens = registry_.RequestsTo("/token");
  ASSERT_EQ(tokens.size(), 1u);
  EXPECT_THAT(tokens[0].path, HasSubstr("scope=repository%3Atest%2Fapp%3Apull"));
}

TEST_F(RegistryClientFakeTest, AccessTokenFieldIsAccepted) {
  token_answer_ = [](const HttpRequest&) { return Json(200, R"({"access_token":"tok-1"})"); };
  RegistryClient client(options_);
  auto manifest = client.GetManifest(ref_, "v1");
  EXPECT_TRUE(manifest.ok()) << manifest.status();
}

TEST_F(RegistryClientFakeTest, TokenEndpointRefusalIsUnauthenticated) {
  token_answer_ = [](const HttpRequest&) { return Json(401, "{}"); };
  RegistryClient client(options_);
  auto manifest = client.GetManifest(ref_, "v1");
  EXPECT_EQ(manifest.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(manifest.status().message(), HasSubstr("zygo login " + registry_.address()));
}

TEST_F(RegistryClientFakeTest, TokenTheRegistryRejectsIsUnauthenticated) {
  token_answer_ = [](const HttpRequest&) { return Json(200, R"({"token":"wrong"})"); };
  RegistryClient client(options_);
  auto manifest = client.GetManifest(ref_, "v1");
  EXPECT_EQ(manifest.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(registry_.RequestsTo("/token").size(), 1u) << "retried more than once";
}

TEST_F(RegistryClientFakeTest, TokenAnswerWithoutTokenIsUnauthenticated) {
  token_answer_ = [](const HttpRequest&) { return Json(200, R"({"expires_in":300})"); };
  RegistryClient client(options_);
  EXPECT_EQ(client.GetManifest(ref_, "v1").status().code(), absl::StatusCode::kUnauthenticated);
}

TEST_F(RegistryClientFakeTest, AcceptHeaderListsEveryManifestType) {
  RegistryClient client(options_);
  ASSERT_TRUE(client.GetManifest(ref_, "v1").ok());
  std::vector<HttpRequest> manifests = registry_.RequestsTo("/v2/test/app/manifests/");
  ASSERT_FALSE(manifests.empty());
  std::string accept = manifests.back().Header("accept");
  EXPECT_EQ(accept, ManifestAcceptHeader());
  for (const char* type :
       {"application/vnd.oci.image.manifest.v1+json", "application/vnd.oci.image.index.v1+json",
        "application/vnd.docker.distribution.manifest.v2+json",
        "application/vnd.docker.distribution.manifest.list.v2+json"}) {
    EXPECT_THAT(accept, HasSubstr(type));
  }
  EXPECT_EQ(manifests.back().Header("user-agent"), "zygo/0.1");
}

TEST_F(RegistryClientFakeTest, ManifestByDigestIsChecked) {
  RegistryClient client(options_);
  auto manifest = client.GetManifest(ref_, Sha256Digest(manifest_));
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  // The registry answers a digest request with other bytes.
  std::string wanted = Sha256Digest("something else");
  registry_.SetHandler([this, wanted](const HttpRequest& request) -> HttpResponse {
    if (request.path == "/v2/test/app/manifests/" + wanted) {
      return {200, {{"Content-Type", kOciManifestType}}, manifest_};
    }
    return Registry(request);
  });
  auto lying = client.GetManifest(ref_, wanted);
  EXPECT_EQ(lying.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(lying.status().message(), HasSubstr(wanted));
}

TEST_F(RegistryClientFakeTest, BlobRedirectDoesNotForwardTheToken) {
  RegistryClient client(options_);
  std::string dest = TempDir() + "/redirected-blob";
  std::vector<std::pair<int64_t, int64_t>> calls;
  ASSERT_TRUE(client
                  .DownloadBlob(ref_, blob_digest_, blob_.size(), dest,
                                [&](int64_t done, int64_t total) {
                                  calls.push_back({done, total});
                                })
                  .ok());
  EXPECT_EQ(ReadAll(dest), blob_);
  ASSERT_FALSE(calls.empty());
  const int64_t size = blob_.size();
  EXPECT_EQ(calls.back().first, size);
  EXPECT_EQ(calls.back().second, size);
  std::vector<HttpRequest> blobs = registry_.RequestsTo("/v2/test/app/blobs/");
  ASSERT_FALSE(blobs.empty());
  EXPECT_EQ(blobs.back().Header("authorization"), "Bearer tok-1");  // control
  std::vector<HttpRequest> cdn = cdn_.requests();
  ASSERT_EQ(cdn.size(), 1u);
  EXPECT_EQ(cdn[0].headers.count("authorization"), 0u) << cdn[0].Header("authorization");
}

TEST_F(RegistryClientFakeTest, BlobRedirectDoesNotForwardBasicCredentials) {
  basic_mode_ = true;
  options_.credentials[registry_.address()] = {"alice", "secret"};
  RegistryClient client(options_);
  std::string dest = TempDir() + "/redirected-basic-blob";
  ASSERT_TRUE(client.DownloadBlob(ref_, blob_digest_, blob_.size(), dest).ok());
  EXPECT_EQ(ReadAll(dest), blob_);
  std::vector<HttpRequest> blobs = registry_.RequestsTo("/v2/test/app/blobs/");
  ASSERT_FALSE(blobs.empty());
  EXPECT_THAT(blobs.back().Header("authorization"), HasSubstr("Basic "));  // control
  std::vector<HttpRequest> cdn = cdn_.requests();
  ASSERT_EQ(cdn.size(), 1u);
  EXPECT_EQ(cdn[0].headers.count("authorization"), 0u) << cdn[0].Header("authorization");
}

TEST_F(RegistryClientFakeTest, BasicChallengeWithoutCredentialsSaysLogin) {
  basic_mode_ = true;
  RegistryClient client(options_);
  auto manifest = client.GetManifest(ref_, "v1");
  EXPECT_EQ(manifest.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(manifest.status().message(), HasSubstr("zygo login " + registry_.address()));
}

TEST_F(RegistryClientFakeTest, BlobWithOtherContentIsDataLossAndRemoved) {
  redirect_blobs_ = false;
  std::string other = blob_;
  other[0] = 'y';  // same size, other bytes
  registry_.SetHandler([this, other](const HttpRequest& request) -> HttpResponse {
    if (absl::StartsWith(request.path, "/v2/test/app/blobs/")) return {200, {}, other};
    return Registry(request);
  });
  RegistryClient client(options_);
  std::string dest = TempDir() + "/corrupt-blob";
  absl::Status status = client.DownloadBlob(ref_, blob_digest_, blob_.size(), dest);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
  EXPECT_THAT(status.message(), HasSubstr(blob_digest_));
  EXPECT_FALSE(FileExists(dest));
}

TEST_F(RegistryClientFakeTest, BlobLongerThanExpectedIsDataLossAndRemoved) {
  redirect_blobs_ = false;
  RegistryClient client(options_);
  std::string dest = TempDir() + "/short-blob";
  absl::Status status = client.DownloadBlob(ref_, blob_digest_, blob_.size() - 10, dest);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
  EXPECT_FALSE(FileExists(dest));
  status = client.DownloadBlob(ref_, blob_digest_, blob_.size() + 10, dest);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
  EXPECT_FALSE(FileExists(dest));
}

TEST_F(RegistryClientFakeTest, StatusCodesMapToErrors) {
  int status_code = 403;
  registry_.SetHandler([&status_code](const HttpRequest&) {
    return Json(status_code, R"({"errors":[{"code":"DENIED","message":"no way"}]})");
  });
  RegistryClient client(options_);
  auto forbidden = client.GetManifest(ref_, "v1");
  EXPECT_EQ(forbidden.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(forbidden.status().message(), HasSubstr("test/app:v1"));
  status_code = 404;
  auto missing = client.GetManifest(ref_, "v1");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("manifest unknown"));
  status_code = 503;
  auto unavailable = client.GetManifest(ref_, "v1");
  EXPECT_EQ(unavailable.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(unavailable.status().message(), HasSubstr("503"));
  EXPECT_THAT(unavailable.status().message(), HasSubstr("no way"));
  std::string dest = TempDir() + "/unavailable-blob";
  absl::Status blob = client.DownloadBlob(ref_, blob_digest_, blob_.size(), dest);
  EXPECT_EQ(blob.code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(FileExists(dest));
}

TEST_F(RegistryClientFakeTest, OversizedManifestIsRefused) {
  std::string huge(5 << 20, ' ');
  registry_.SetHandler([&huge](const HttpRequest&) -> HttpResponse {
    return {200, {{"Content-Type", kOciManifestType}}, huge};
  });
  RegistryClient client(options_);
  EXPECT_EQ(client.GetManifest(ref_, "v1").status().code(), absl::StatusCode::kResourceExhausted);
}

TEST_F(RegistryClientFakeTest, InvalidTagsAndDigestsAreRefusedBeforeAnyRequest) {
  RegistryClient client(options_);
  for (const char* bad : {"", "../x", "a/b", "v1?x=1", "sha512:abcd", "sha256:XYZ"}) {
    EXPECT_EQ(client.GetManifest(ref_, bad).status().code(), absl::StatusCode::kInvalidArgument)
        << bad;
  }
  EXPECT_EQ(client.DownloadBlob(ref_, "sha256:short", 1, TempDir() + "/never").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(registry_.requests().empty());
}

TEST_F(RegistryClientFakeTest, HttpsUnlessTheRegistryIsInsecure) {
  options_.insecure_registries.clear();
  options_.plain_http_on_loopback = false;  // --tls-verify=true
  RegistryClient client(options_);
  auto manifest = client.GetManifest(ref_, "v1");
  // The fake server speaks plain HTTP, so a TLS handshake with it fails.
  EXPECT_EQ(manifest.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(manifest.status().message(), HasSubstr("https://" + registry_.address()));
  for (const HttpRequest& request : registry_.requests()) {
    EXPECT_FALSE(absl::StartsWith(request.path, "/v2/")) << "sent plain HTTP";
  }
}

// Docker's default: the fake registry is on 127.0.0.1, so plain HTTP reaches it with no
// insecure setting.
TEST_F(RegistryClientFakeTest, ALoopbackRegistryIsPlainHttpByDefault) {
  options_.insecure_registries.clear();
  RegistryClient client(options_);
  auto manifest = client.GetManifest(ref_, "v1");
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  EXPECT_EQ(manifest->bytes, manifest_);
  bool sent_v2 = false;
  for (const HttpRequest& request : registry_.requests()) {
    sent_v2 = sent_v2 || absl::StartsWith(request.path, "/v2/");
  }
  EXPECT_TRUE(sent_v2);
}

TEST_F(RegistryClientFakeTest, ConnectionRefusedIsUnavailableAndLeavesNoFile) {
  // A port nothing listens on: bind one, then close it.
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), len), 0);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  close(fd);
  ref_.registry = absl::StrCat("127.0.0.1:", ntohs(addr.sin_port));
  options_.insecure_registries = {ref_.registry};
  RegistryClient client(options_);
  std::string dest = TempDir() + "/refused-blob";
  absl::Status status = client.DownloadBlob(ref_, blob_digest_, blob_.size(), dest);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_FALSE(FileExists(dest));
}

TEST_F(RegistryClientFakeTest, ProgressIsThrottled) {
  redirect_blobs_ = false;
  blob_ = std::string(64 << 20, 'z');
  blob_digest_ = Sha256Digest(blob_);
  RegistryClient client(options_);
  std::string dest = TempDir() + "/big-blob";
  int calls = 0;
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(
      client
          .DownloadBlob(ref_, blob_digest_, blob_.size(), dest, [&](int64_t, int64_t) { ++calls; })
          .ok());
  auto elapsed = std::chrono::steady_clock::now() - start;
  int allowed =
      2 + static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count() /
                           100);
  EXPECT_GE(calls, 1);
  EXPECT_LE(calls, allowed);
  unlink(dest.c_str());
}

}  // namespace
}  // namespace zygo::images
