// The pools' specs as zygo mcp writes them (registering them is in mcp_test.sh).
#include "cli/mcp_pools.h"

#include "gtest/gtest.h"

namespace zygo::cli::mcp {
namespace {

TEST(MakePoolSpecTest, WritesAPoolWithTheLimitsAndNoNetwork) {
  PoolOptions options;
  options.code_dir = "/srv/mcp";
  PoolSpec spec = MakePoolSpec(options, Language::kPython);
  EXPECT_TRUE(spec.owned);
  EXPECT_EQ(spec.name, "mcp-python");
  EXPECT_NE(spec.toml.find("name = \"mcp-python\"\nruntime = \"python\"\npool = true\n"
                           "code = \"/srv/mcp\"\n"),
            std::string::npos)
      << spec.toml;
  EXPECT_NE(spec.toml.find("memory = \"256M\"\ntimeout = \"30s\"\npids = 64\n"),
            std::string::npos);
  EXPECT_NE(spec.toml.find("[net]\nmode = \"none\"\n"), std::string::npos);
  EXPECT_EQ(spec.toml.find("allow"), std::string::npos);
  EXPECT_EQ(MakePoolSpec(options, Language::kJavaScript).name, "mcp-node");
}

TEST(MakePoolSpecTest, TheOriginChangesWithTheSpec) {
  PoolOptions options;
  std::string before = MakePoolSpec(options, Language::kJavaScript).origin;
  EXPECT_EQ(before.rfind("zygo-mcp-node-", 0), 0u) << before;
  EXPECT_EQ(MakePoolSpec(options, Language::kJavaScript).origin, before);
  options.memory = "512M";
  EXPECT_NE(MakePoolSpec(options, Language::kJavaScript).origin, before);
}

TEST(MakePoolSpecTest, EgressListsTheAllowedNamesQuoted) {
  PoolOptions options;
  options.net_mode = "egress";
  options.allow = {"pypi.org:443", "x\"y:1"};
  PoolSpec spec = MakePoolSpec(options, Language::kPython);
  EXPECT_NE(spec.toml.find("mode = \"egress\"\nallow = [\"pypi.org:443\", \"x\\\"y:1\"]\n"),
            std::string::npos)
      << spec.toml;
}

TEST(MakePoolSpecTest, ANamedPoolIsUsedAsItIs) {
  PoolOptions options;
  options.node_pool = "js";
  PoolSpec spec = MakePoolSpec(options, Language::kJavaScript);
  EXPECT_FALSE(spec.owned);
  EXPECT_EQ(spec.name, "js");
  EXPECT_TRUE(spec.toml.empty());
}

}  // namespace
}  // namespace zygo::cli::mcp
