#include "bench/pull/pull_cases.h"

#include <algorithm>

#include "gtest/gtest.h"

namespace zygo::bench {
namespace {

bool Has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

TEST(ZygoEnvironment, DropsTheCallersStoreAndBytecodeSettings) {
  std::vector<std::string> caller = {"PATH=/usr/bin", "ZYGO_HOME=/elsewhere", "ZYGO_BYTECODE=1"};
  EXPECT_EQ(ZygoEnvironment(caller, true),
            (std::vector<std::string>{"PATH=/usr/bin", "ZYGO_BYTECODE=0"}));
  EXPECT_EQ(ZygoEnvironment(caller, false), (std::vector<std::string>{"PATH=/usr/bin"}));
}

PullCommandsInput PullInput() {
  return {"/z",      "/usr/bin/skopeo", "/usr/bin/umoci", "127.0.0.1:5000/python:bench",
          "/s/cold", "/s/warm",         "/s/peer",        {"PATH=/usr/bin"}};
}

TEST(PullSteps, ColdAndWarmDifferOnlyInTheStore) {
  auto variants = PullSteps(PullInput(), false);
  ASSERT_EQ(variants.size(), 3u);
  EXPECT_EQ(variants[0].first, kVariantZygoCold);
  EXPECT_EQ(variants[1].first, kVariantZygoWarm);
  EXPECT_EQ(variants[2].first, kVariantPullPeer);
  const Command& cold = variants[0].second.at(0).command;
  EXPECT_EQ(cold.argv,
            (std::vector<std::string>{"/z", "--root", "/s/cold", "pull", "--tls-verify=false",
                                      "127.0.0.1:5000/python:bench"}));
  EXPECT_FALSE(cold.inherit_env);
  EXPECT_TRUE(Has(cold.env, "ZYGO_BYTECODE=0"));
  EXPECT_EQ(variants[0].second[0].shown.rfind("ZYGO_BYTECODE=0 /z --root /s/cold pull", 0), 0u)
      << variants[0].second[0].shown;
  EXPECT_EQ(variants[1].second.at(0).command.argv[2], "/s/warm");
}

TEST(PullSteps, ThePeerCopiesThenUnpacks) {
  auto variants = PullSteps(PullInput(), true);
  ASSERT_EQ(variants.size(), 4u);
  EXPECT_EQ(variants[1].first, "zygo cold default");
  EXPECT_FALSE(Has(variants[1].second.at(0).command.env, "ZYGO_BYTECODE=0"));
  const std::vector<TimedStep>& peer = variants[3].second;
  ASSERT_EQ(peer.size(), 2u);
  EXPECT_EQ(peer[0].command.argv,
            (std::vector<std::string>{"/usr/bin/skopeo", "copy", "--src-tls-verify=false",
                                      "docker://127.0.0.1:5000/python:bench",
                                      "oci:/s/peer/layout:bench"}));
  EXPECT_EQ(peer[1].command.argv,
            (std::vector<std::string>{"/usr/bin/umoci", "unpack", "--rootless", "--image",
                                      "/s/peer/layout:bench", "/s/peer/bundle"}));
  EXPECT_EQ(PeerRootfs("/s/peer"), "/s/peer/bundle/rootfs");
}

TEST(OneShotSteps, BwrapGetsTheRootAndTheEnvironmentZygoGives) {
  OneShotCommandsInput in{"/z",
                          "/usr/bin/bwrap",
                          "/s/store",
                          "python:bench",
                          "/s/store/rootfs/sha256/ab",
                          {"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"},
                          "",
                          {"python3", "-c", "pass"},
                          {"PATH=/host"}};
  auto variants = OneShotSteps(in);
  ASSERT_EQ(variants.size(), 3u);
  EXPECT_EQ(variants[0].first, kVariantZygoNoBytecode);
  EXPECT_EQ(variants[1].first, kVariantZygoDefault);
  EXPECT_EQ(variants[0].second.at(0).command.argv,
            (std::vector<std::string>{"/z", "--root", "/s/store", "run", "python:bench", "python3",
                                      "-c", "pass"}));
  EXPECT_TRUE(Has(variants[0].second[0].command.env, "ZYGO_BYTECODE=0"));
  EXPECT_FALSE(Has(variants[1].second.at(0).command.env, "ZYGO_BYTECODE=0"));
  const std::vector<std::string>& bwrap = variants[2].second.at(0).command.argv;
  const std::vector<std::string> expected = {"/usr/bin/bwrap",
                                             "--unshare-all",
                                             "--unshare-user",
                                             "--die-with-parent",
                                             "--new-session",
                                             "--ro-bind",
                                             "/s/store/rootfs/sha256/ab",
                                             "/",
                                             "--proc",
                                             "/proc",
                                             "--dev",
                                             "/dev",
                                             "--tmpfs",
                                             "/tmp",
                                             "--hostname",
                                             "zygo",
                                             "--chdir",
                                             "/",
                                             "--clearenv",
                                             "--setenv",
                                             "PATH",
                                             "/usr/local/bin:/usr/bin:/bin",
                                             "--setenv",
                                             "HOME",
                                             "/tmp",
                                             "--setenv",
                                             "HOSTNAME",
                                             "zygo",
                                             "--setenv",
                                             "LANG",
                                             "C.UTF-8",
                                             "python3",
                                             "-c",
                                             "pass"};
  EXPECT_EQ(bwrap, expected);
}

}  // namespace
}  // namespace zygo::bench
