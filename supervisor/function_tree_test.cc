// Which functions share a runtime zygote, and what its sandbox keeps of a function's: pure
// logic, no sandbox.
#include "supervisor/function_tree.h"

#include <algorithm>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace zygo::supervisor {
namespace {

FunctionSpec Python(const std::string& code, std::vector<std::pair<std::string, std::string>> env) {
  FunctionSpec spec;
  spec.name = "fn";
  spec.runtime = Runtime::kPython;
  spec.entry = "handler.py:main";
  spec.code = code;
  spec.env = std::move(env);
  return spec;
}

// The function's sandbox as Function builds it: its own code at /code, the agent, its env.
core::Spec SandboxOf(const FunctionSpec& function) {
  core::Spec sandbox = ToSandboxSpec(function);
  sandbox.volumes.push_back({"/opt/zygo-agent-python", "/.zygo-agent", true});
  return sandbox;
}

core::Spec RuntimeOf(const FunctionSpec& function) {
  return RuntimeSandboxSpec(SandboxOf(function), function, "/state/empty", "/.zygo-agent", 200);
}

bool Has(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

TEST(FunctionTreeTest, TheRuntimeSandboxHoldsNothingOfTheFunctionsOwn) {
  const FunctionSpec function = Python("/srv/alpha", {{"API_KEY", "alpha-secret"}, {"TZ", "UTC"}});
  const core::Spec runtime = RuntimeOf(function);
  for (const core::VolumeSpec& volume : runtime.volumes) {
    EXPECT_NE(volume.source, "/srv/alpha") << "the function's code reached its runtime";
  }
  bool empty_code = false;
  for (const core::VolumeSpec& volume : runtime.volumes) {
    empty_code |= volume.destination == "/code" && volume.source == "/state/empty";
  }
  EXPECT_TRUE(empty_code);
  EXPECT_FALSE(Has(runtime.env, "API_KEY=alpha-secret"));
  EXPECT_TRUE(Has(runtime.env, "TZ=UTC"));  // read once by `time` at import
  EXPECT_TRUE(Has(runtime.argv, "--runtime"));
  EXPECT_GT(runtime.function_zygotes, 0);
  EXPECT_EQ(runtime.net, core::NetMode::kNone);
  // The control: the function's own sandbox had both.
  EXPECT_TRUE(Has(SandboxOf(function).env, "API_KEY=alpha-secret"));
}

TEST(FunctionTreeTest, FunctionsShareARuntimeUnlessWhatTheInterpreterReadsAtStartDiffers) {
  const std::string alpha = RuntimeKey(RuntimeOf(Python("/srv/alpha", {{"GREETING", "a"}})));
  const std::string beta = RuntimeKey(RuntimeOf(Python("/srv/beta", {{"OTHER", "b"}})));
  EXPECT_EQ(alpha, beta);
  for (const char* key : {"TZ", "PATH", "PYTHONHASHSEED", "LD_PRELOAD", "LANG", "LC_ALL", "HOME",
                          "ZYGO_LIBPYTHON", "VIRTUAL_ENV"}) {
    EXPECT_NE(RuntimeKey(RuntimeOf(Python("/srv/alpha", {{key, "x"}}))), alpha) << key;
  }
}

TEST(FunctionTreeTest, OnlyPythonFunctionsWithoutANetworkFork) {
  FunctionSpec python = Python("/srv/alpha", {});
  EXPECT_EQ(WhyNotInTree(python), "");
  FunctionSpec exec = python;
  exec.runtime = Runtime::kExec;
  EXPECT_NE(WhyNotInTree(exec), "");
  FunctionSpec node = python;
  node.runtime = Runtime::kNode;
  EXPECT_EQ(WhyNotInTree(node), "its runtime forks no interpreter");
  for (core::NetMode net : {core::NetMode::kEgress, core::NetMode::kFull}) {
    FunctionSpec networked = python;
    networked.net = net;
    EXPECT_NE(WhyNotInTree(networked), "") << core::NetModeName(net);
  }
}

}  // namespace
}  // namespace zygo::supervisor
