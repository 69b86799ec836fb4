// Sample OCI and Docker documents, platform selection, image configs and malformed JSON.
#include "images/manifest.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zygo::images {
namespace {

using ::testing::HasSubstr;

const std::string kD1 = "sha256:" + std::string(64, '1');
const std::string kD2 = "sha256:" + std::string(64, '2');
const std::string kD3 = "sha256:" + std::string(64, '3');

constexpr char kOciManifestType[] = "application/vnd.oci.image.manifest.v1+json";
constexpr char kOciIndexType[] = "application/vnd.oci.image.index.v1+json";
constexpr char kDockerManifestType[] = "application/vnd.docker.distribution.manifest.v2+json";
constexpr char kDockerListType[] = "application/vnd.docker.distribution.manifest.list.v2+json";

// $1, $2, $3 stand for the digests above.
std::string Doc(absl::string_view text) {
  return absl::StrReplaceAll(text, {{"$1", kD1}, {"$2", kD2}, {"$3", kD3}});
}

const char kOciManifest[] = R"({
  "schemaVersion": 2,
  "mediaType": "application/vnd.oci.image.manifest.v1+json",
  "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": "$1", "size": 1470},
  "layers": [
    {"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": "$2", "size": 2000},
    {"mediaType": "application/vnd.oci.image.layer.v1.tar+zstd", "digest": "$3", "size": 30}
  ],
  "annotations": {"org.opencontainers.image.created": "2024-01-01T00:00:00Z"}
})";

// As docker buildx pushes it: a provenance attestation as unknown/unknown, arm variants.
const char kOciIndex[] = R"({
  "schemaVersion": 2,
  "mediaType": "application/vnd.oci.image.index.v1+json",
  "manifests": [
    {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": "$1", "size": 100,
     "platform": {"architecture": "amd64", "os": "linux"}},
    {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": "$2", "size": 101,
     "platform": {"architecture": "arm64", "os": "linux", "variant": "v8"}},
    {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": "$3", "size": 102,
     "platform": {"architecture": "unknown", "os": "unknown"},
     "annotations": {"vnd.docker.reference.type": "attestation-manifest"}}
  ]
})";

const char kDockerManifest[] = R"({
  "schemaVersion": 2,
  "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
  "config": {"mediaType": "application/vnd.docker.container.image.v1+json", "size": 7023,
             "digest": "$1"},
  "layers": [{"mediaType": "application/vnd.docker.image.rootfs.diff.tar.gzip", "size": 32654,
              "digest": "$2"}]
})";

const char kDockerList[] = R"({
  "schemaVersion": 2,
  "mediaType": "application/vnd.docker.distribution.manifest.list.v2+json",
  "manifests": [
    {"mediaType": "application/vnd.docker.distribution.manifest.v2+json", "size": 7143,
     "digest": "$1", "platform": {"architecture": "ppc64le", "os": "linux"}},
    {"mediaType": "application/vnd.docker.distribution.manifest.v2+json", "size": 7682,
     "digest": "$2", "platform": {"architecture": "arm64", "os": "linux", "variant": "v8.2"}},
    {"mediaType": "application/vnd.docker.distribution.manifest.v2+json", "size": 7682,
     "digest": "$3", "platform": {"architecture": "arm64", "os": "linux"}},
    {"mediaType": "application/vnd.docker.distribution.manifest.v2+json", "size": 7682,
     "digest": "$1", "platform": {"architecture": "amd64", "os": "windows",
                                  "os.version": "10.0.17763.5458"}}
  ]
})";

TEST(ManifestTest, AcceptHeaderNamesAllFourTypes) {
  std::string accept = ManifestAcceptHeader();
  int count = 0;
  for (const char* const* type = kManifestMediaTypes; *type != nullptr; ++type) {
    EXPECT_THAT(accept, HasSubstr(*type));
    ++count;
  }
  EXPECT_EQ(count, 4);
  for (const char* type : {kOciManifestType, kOciIndexType, kDockerManifestType, kDockerListType}) {
    EXPECT_THAT(accept, HasSubstr(type));
  }
}

TEST(ManifestTest, ParsesOciManifest) {
  for (const char* content_type : {kOciManifestType, "", "application/json"}) {
    SCOPED_TRACE(content_type);
    absl::StatusOr<Manifest> manifest = ParseManifest(Doc(kOciManifest), content_type);
    ASSERT_TRUE(manifest.ok()) << manifest.status();
    EXPECT_FALSE(manifest->is_index);
    EXPECT_EQ(manifest->config.digest, kD1);
    EXPECT_EQ(manifest->config.size, 1470);
    EXPECT_EQ(manifest->config.media_type, "application/vnd.oci.image.config.v1+json");
    ASSERT_EQ(manifest->layers.size(), 2u);
    EXPECT_EQ(manifest->layers[0].digest, kD2);
    EXPECT_EQ(manifest->layers[0].media_type, "application/vnd.oci.image.layer.v1.tar+gzip");
    EXPECT_EQ(manifest->layers[1].digest, kD3);
    EXPECT_EQ(manifest->layers[1].size, 30);
  }
}

TEST(ManifestTest, ContentTypeParametersAreIgnored) {
  absl::StatusOr<Manifest> manifest =
      ParseManifest(Doc(kOciManifest), "Application/vnd.oci.image.manifest.v1+json; charset=utf-8");
  ASSERT_TRUE(manifest.ok()) << manifest.status();
}

TEST(ManifestTest, OciManifestWithoutMediaTypeFieldUsesHeaderOrShape) {
  std::string doc = Doc(R"({"schemaVersion": 2,
    "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": "$1", "size": 2},
    "layers": []})");
  for (const char* content_type : {kOciManifestType, ""}) {
    absl::StatusOr<Manifest> manifest = ParseManifest(doc, content_type);
    ASSERT_TRUE(manifest.ok()) << manifest.status();
    EXPECT_FALSE(manifest->is_index);
    EXPECT_TRUE(manifest->layers.empty());
  }
  absl::StatusOr<Manifest> index =
      ParseManifest(Doc(R"({"schemaVersion": 2, "manifests": []})"), "");
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_TRUE(index->is_index);
}

TEST(ManifestTest, ParsesDockerManifest) {
  absl::StatusOr<Manifest> manifest = ParseManifest(Doc(kDockerManifest), kDockerManifestType);
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  EXPECT_FALSE(manifest->is_index);
  EXPECT_EQ(manifest->config.media_type, "application/vnd.docker.container.image.v1+json");
  ASSERT_EQ(manifest->layers.size(), 1u);
  EXPECT_EQ(manifest->layers[0].media_type, "application/vnd.docker.image.rootfs.diff.tar.gzip");
  EXPECT_EQ(manifest->layers[0].size, 32654);
}

TEST(ManifestTest, ParsesOciIndexAndSelectsPlatform) {
  absl::StatusOr<Manifest> index = ParseManifest(Doc(kOciIndex), kOciIndexType);
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_TRUE(index->is_index);
  ASSERT_EQ(index->manifests.size(), 3u);
  EXPECT_EQ(index->manifests[1].os, "linux");
  EXPECT_EQ(index->manifests[1].architecture, "arm64");
  EXPECT_EQ(index->manifests[1].variant, "v8");
  EXPECT_EQ(index->manifests[1].size, 101);

  EXPECT_EQ(SelectPlatform(*index, "amd64")->digest, kD1);
  EXPECT_EQ(SelectPlatform(*index, "arm64")->digest, kD2);
  EXPECT_EQ(SelectPlatform(*index, "arm64/v8")->digest, kD2);

  absl::StatusOr<Descriptor> missing = SelectPlatform(*index, "s390x");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(),
            "the image has no linux/s390x manifest; available: linux/amd64, linux/arm64/v8");
}

TEST(ManifestTest, HostPlatformIsTheDefault) {
  absl::StatusOr<Manifest> index = ParseManifest(Doc(kOciIndex), kOciIndexType);
  ASSERT_TRUE(index.ok()) << index.status();
  std::string host = HostArchitecture();
  absl::StatusOr<Descriptor> chosen = SelectPlatform(*index);
  if (host == "amd64" || host == "arm64") {
    ASSERT_TRUE(chosen.ok()) << chosen.status();
    EXPECT_EQ(chosen->architecture, host);
  } else {
    EXPECT_EQ(chosen.status().code(), absl::StatusCode::kNotFound);
  }
}

TEST(ManifestTest, DockerListPrefersArm64V8OrNoVariant) {
  absl::StatusOr<Manifest> list = ParseManifest(Doc(kDockerList), kDockerListType);
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_TRUE(list->is_index);
  // The entry without a variant beats v8.2, although v8.2 comes first.
  EXPECT_EQ(SelectPlatform(*list, "arm64")->digest, kD3);
  EXPECT_EQ(SelectPlatform(*list, "arm64/v8.2")->digest, kD2);
  EXPECT_EQ(SelectPlatform(*list, "ppc64le")->digest, kD1);
  // windows/amd64 is not linux/amd64.
  absl::StatusOr<Descriptor> amd64 = SelectPlatform(*list, "amd64");
  EXPECT_EQ(amd64.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(amd64.status().message(),
              HasSubstr("available: linux/ppc64le, linux/arm64/v8.2, linux/arm64, windows/amd64"));
}

TEST(ManifestTest, SelectPlatformNeedsAnIndex) {
  absl::StatusOr<Manifest> manifest = ParseManifest(Doc(kOciManifest), kOciManifestType);
  ASSERT_TRUE(manifest.ok());
  EXPECT_EQ(SelectPlatform(*manifest, "amd64").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ManifestTest, HostArchitectureIsOciSpelling) {
  std::string arch = HostArchitecture();
  EXPECT_NE(arch, "x86_64");
  EXPECT_NE(arch, "aarch64");
#if defined(__x86_64__)
  EXPECT_EQ(arch, "amd64");
#elif defined(__aarch64__)
  EXPECT_EQ(arch, "arm64");
#endif
}

struct BadDoc {
  std::string doc;
  std::string content_type;
  std::string problem;
};

TEST(ManifestTest, MalformedDocumentsAreErrorsNotExceptions) {
  const BadDoc cases[] = {
      {"", "", "not valid JSON"},
      {"{", kOciManifestType, "not valid JSON"},
      {"[]", "", "not a JSON object"},
      {"\"manifest\"", "", "not a JSON object"},
      {"null", "", "not a JSON object"},
      {"{}", "", "neither an image manifest nor an index"},
      {R"({"schemaVersion": 1, "name": "x", "fsLayers": []})", "", "schema 1"},
      {"{}", "application/vnd.docker.distribution.manifest.v1+prettyjws", "schema 1"},
      {R"({"schemaVersion": "2", "manifests": []})", "", "unsupported schemaVersion \"2\""},
      {R"({"schemaVersion": 3, "manifests": []})", "", "unsupported schemaVersion 3"},
      {R"({"mediaType": 7, "manifests": []})", "", "mediaType is not a string"},
      {R"({"mediaType": "application/vnd.oci.artifact.manifest.v1+json"})", "",
       "unsupported manifest media type"},
      {Doc(kOciManifest), kOciIndexType, "the document says"},
      {R"({"manifests": {}})", kOciIndexType, "manifests is not an array"},
      {R"({"manifests": [1]})", kOciIndexType, "manifests[0] is not an object"},
      {R"({"manifests": [{"size": 1}]})", kOciIndexType, "manifests[0] has no \"digest\""},
      {R"({"manifests": [{"digest": 5, "size": 1}]})", kOciIndexType, "digest is not a string"},
      {R"({"manifests": [{"digest": "sha256:abc", "size": 1}]})", kOciIndexType, "3 hex digits"},
      {Doc(R"({"manifests": [{"digest": "$1"}]})"), kOciIndexType, "size is missing"},
      {Doc(R"({"manifests": [{"digest": "$1", "size": -1}]})"), kOciIndexType, "size is missing"},
      {Doc(R"({"manifests": [{"digest": "$1", "size": 1.5}]})"), kOciIndexType,
       "not a non-negative integer"},
      {Doc(R"({"manifests": [{"digest": "$1", "size": 1, "platform": "linux"}]})"), kOciIndexType,
       "platform is not an object"},
      {Doc(R"({"manifests": [{"digest": "$1", "size": 1, "platform": {"os": ["linux"]}}]})"),
       kOciIndexType, "platform.os is not a string"},
      {R"({"layers": []})", kOciManifestType, "has no \"config\""},
      {Doc(R"({"config": {"digest": "$1", "size": 1}})"), kOciManifestType, "has no \"layers\""},
      {Doc(R"({"config": [], "layers": []})"), kOciManifestType, "config is not an object"},
      {Doc(R"({"config": {"digest": "$1", "size": 1}, "layers": [null]})"), kOciManifestType,
       "layers[0] is not an object"},
      {Doc(R"({"config": {"digest": "$1", "size": 1e30}, "layers": []})"), kOciManifestType,
       "size is missing or not a non-negative integer"},
      {Doc(R"({"config": {"digest": "$1", "size": 18446744073709551615}, "layers": []})"),
       kOciManifestType, "size is missing or not a non-negative integer"},
  };
  for (const BadDoc& c : cases) {
    SCOPED_TRACE(c.doc);
    absl::StatusOr<Manifest> manifest = ParseManifest(c.doc, c.content_type);
    ASSERT_FALSE(manifest.ok());
    EXPECT_EQ(manifest.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(manifest.status().message(), HasSubstr("invalid manifest: "));
    EXPECT_THAT(manifest.status().message(), HasSubstr(c.problem));
  }
}

TEST(ManifestTest, SurvivesDeepNestingAndBinaryGarbage) {
  std::string deep = std::string(200000, '[') + std::string(200000, ']');
  EXPECT_FALSE(ParseManifest(deep, "").ok());
  EXPECT_FALSE(ParseImageConfig(deep).ok());
  std::string garbage;
  for (int i = 0; i < 4096; ++i) garbage.push_back(static_cast<char>((i * 131) % 256));
  EXPECT_FALSE(ParseManifest(garbage, kOciManifestType).ok());
  EXPECT_FALSE(ParseManifest(std::string("{\"a\":\"\xff\xfe\"}"), "").ok());
}

const char kConfig[] = R"({
  "architecture": "amd64",
  "os": "linux",
  "created": "2024-01-01T00:00:00Z",
  "config": {
    "User": "1000:1000",
    "Env": ["PATH=/usr/local/bin:/usr/bin", "LANG=C.UTF-8"],
    "Entrypoint": ["/docker-entrypoint.sh"],
    "Cmd": ["python3", "-c", "pass"],
    "WorkingDir": "/app",
    "Labels": {"a": "b"}
  },
  "rootfs": {"type": "layers", "diff_ids": ["$1", "$2"]},
  "history": [{"created_by": "x"}]
})";

TEST(ManifestTest, ParsesImageConfig) {
  absl::StatusOr<ImageConfig> config = ParseImageConfig(Doc(kConfig));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->architecture, "amd64");
  EXPECT_EQ(config->os, "linux");
  EXPECT_EQ(config->user, "1000:1000");
  EXPECT_THAT(config->env, ::testing::ElementsAre("PATH=/usr/local/bin:/usr/bin", "LANG=C.UTF-8"));
  EXPECT_THAT(config->entrypoint, ::testing::ElementsAre("/docker-entrypoint.sh"));
  EXPECT_THAT(config->cmd, ::testing::ElementsAre("python3", "-c", "pass"));
  EXPECT_EQ(config->working_dir, "/app");
  EXPECT_THAT(config->diff_ids, ::testing::ElementsAre(kD1, kD2));
}

TEST(ManifestTest, ImageConfigMissingFieldsAreFine) {
  // Docker writes null for unset lists; a scratch image may have no config at all.
  for (const char* doc : {R"({"config": {"Env": null, "Cmd": null, "Entrypoint": null,
                                          "WorkingDir": "", "User": null},
                              "rootfs": {"type": "layers", "diff_ids": []}})",
                          R"({"rootfs": {"diff_ids": ["$1"]}})",
                          R"({"config": null, "rootfs": {"diff_ids": ["$1"]}})"}) {
    SCOPED_TRACE(doc);
    absl::StatusOr<ImageConfig> config = ParseImageConfig(Doc(doc));
    ASSERT_TRUE(config.ok()) << config.status();
    EXPECT_TRUE(config->env.empty());
    EXPECT_TRUE(config->cmd.empty());
    EXPECT_TRUE(config->entrypoint.empty());
    EXPECT_EQ(config->working_dir, "");
    EXPECT_EQ(config->user, "");
    EXPECT_EQ(config->architecture, "");
  }
}

TEST(ManifestTest, ImageConfigErrors) {
  const std::pair<std::string, std::string> cases[] = {
      {"{}", "has no \"rootfs\""},
      {R"({"rootfs": {"type": "layers"}})", "no rootfs.diff_ids"},
      {R"({"rootfs": {"diff_ids": null}})", "no rootfs.diff_ids"},
      {R"({"rootfs": {"type": "other", "diff_ids": []}})", "rootfs.type is \"other\""},
      {R"({"rootfs": {"diff_ids": ["sha256:12"]}})", "rootfs.diff_ids[0]"},
      {R"({"rootfs": {"diff_ids": [1]}})", "non-string entry"},
      {R"({"config": {"Env": "A=B"}, "rootfs": {"diff_ids": []}})", "config.Env is not an array"},
      {R"({"config": {"Cmd": [1]}, "rootfs": {"diff_ids": []}})", "config.Cmd has a non-string"},
      {R"({"config": {"User": 0}, "rootfs": {"diff_ids": []}})", "config.User is not a string"},
      {R"({"config": 5, "rootfs": {"diff_ids": []}})", "config.config is not an object"},
      {R"({"os": [], "rootfs": {"diff_ids": []}})", "os is not a string"},
      {"[1,2", "not valid JSON"},
  };
  for (const auto& [doc, problem] : cases) {
    SCOPED_TRACE(doc);
    absl::StatusOr<ImageConfig> config = ParseImageConfig(doc);
    ASSERT_FALSE(config.ok());
    EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(config.status().message(), HasSubstr("invalid image config: "));
    EXPECT_THAT(config.status().message(), HasSubstr(problem));
  }
}

TEST(ManifestTest, LayerMediaTypes) {
  for (const char* ok :
       {"application/vnd.oci.image.layer.v1.tar", "application/vnd.oci.image.layer.v1.tar+gzip",
        "application/vnd.oci.image.layer.v1.tar+zstd",
        "application/vnd.docker.image.rootfs.diff.tar.gzip"}) {
    EXPECT_TRUE(CheckLayerMediaType(ok).ok()) << ok;
  }
  for (const char* foreign : {"application/vnd.oci.image.layer.nondistributable.v1.tar",
                              "application/vnd.oci.image.layer.nondistributable.v1.tar+gzip",
                              "application/vnd.oci.image.layer.nondistributable.v1.tar+zstd",
                              "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip"}) {
    absl::Status status = CheckLayerMediaType(foreign);
    EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << foreign;
    EXPECT_THAT(status.message(), HasSubstr("non-distributable (foreign) layer"));
    EXPECT_THAT(status.message(), HasSubstr(foreign));
  }
  absl::Status helm = CheckLayerMediaType("application/vnd.cncf.helm.chart.content.v1.tar+gzip");
  EXPECT_EQ(helm.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(helm.message(), HasSubstr("unsupported layer media type "
                                        "application/vnd.cncf.helm.chart.content.v1.tar+gzip"));
  EXPECT_THAT(CheckLayerMediaType("").message(), HasSubstr("no media type"));
}

}  // namespace
}  // namespace zygo::images
