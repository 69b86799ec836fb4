// Tests for the function spec parser: every field, every default, every error with its line.
#include "supervisor/function_spec.h"

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace zygo::supervisor {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;

class FunctionSpecTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = absl::StrCat(::testing::TempDir(), "/spec-XXXXXX");
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    // The parser resolves symlinks in `code`; compare against the canonical form.
    dir_ = std::filesystem::canonical(pattern).string();
    WriteFile("handler.py", "def main(event):\n    return event\n");
    std::filesystem::create_directories(dir_ + "/src/pkg");
    WriteFile("src/pkg/app.py", "def run(event):\n    return 1\n");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void WriteFile(const std::string& relative, const std::string& text) {
    std::ofstream(dir_ + "/" + relative) << text;
  }

  absl::StatusOr<FunctionSpec> Parse(const std::string& text) {
    return ParseFunctionSpec(text, "hello.toml", dir_, policy_);
  }

  // The error message of a spec that must fail.
  std::string ErrorOf(const std::string& text) {
    absl::StatusOr<FunctionSpec> spec = Parse(text);
    EXPECT_FALSE(spec.ok()) << text;
    if (spec.ok()) return "";
    EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(spec.status().message());
  }

  std::string dir_;
  CodePolicy policy_;
};

TEST_F(FunctionSpecTest, MinimalPythonFunctionGetsEveryDefault) {
  const std::string text = "name = \"hello\"\nentry = \"handler.py:main\"\n";
  absl::StatusOr<FunctionSpec> spec = Parse(text);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->name, "hello");
  EXPECT_EQ(spec->image.text, "host");
  EXPECT_EQ(spec->runtime, Runtime::kPython);
  EXPECT_EQ(spec->entry, "handler.py:main");
  EXPECT_EQ(spec->handler_file, "handler.py");
  EXPECT_EQ(spec->handler_function, "main");
  EXPECT_THAT(spec->command, IsEmpty());
  EXPECT_EQ(spec->code, dir_);
  EXPECT_FALSE(spec->pool);
  EXPECT_THAT(spec->preload, IsEmpty());
  EXPECT_EQ(spec->cold_after_ms, 600'000);
  EXPECT_EQ(spec->spares, 2);
  EXPECT_EQ(spec->memory_bytes, 256LL << 20);
  EXPECT_EQ(spec->pids_limit, 64);
  EXPECT_EQ(spec->cpus, 1.0);
  EXPECT_EQ(spec->timeout_ms, 30'000);
  EXPECT_THAT(spec->env, IsEmpty());
  EXPECT_EQ(spec->net, core::NetMode::kNone);
  EXPECT_THAT(spec->allow, IsEmpty());
  EXPECT_EQ(spec->source_toml, text);
  EXPECT_EQ(spec->origin, "hello.toml");
  EXPECT_EQ(spec->base_dir, dir_);
}

TEST_F(FunctionSpecTest, EveryFieldSet) {
  absl::StatusOr<FunctionSpec> spec = Parse(R"(
name = "full_fn-2"
image = "dir:/"
runtime = "python"
entry = "pkg/app.py:run"
code = "src"
preload = ["json", "os.path"]
cold_after = "90s"
spares = 64

[limits]
memory = "1G"
pids = 10
cpu = 0.5
timeout = "24h"

[env]
ZETA = "z"
A_1 = "one = 1"

[net]
mode = "egress"
allow = ["api.example.com:443", "*.cdn.example.com:80"]
)");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->name, "full_fn-2");
  EXPECT_EQ(spec->image.text, "dir:/");
  EXPECT_EQ(spec->code, dir_ + "/src");
  EXPECT_EQ(spec->handler_file, "pkg/app.py");
  EXPECT_EQ(spec->handler_function, "run");
  EXPECT_THAT(spec->preload, ElementsAre("json", "os.path"));
  EXPECT_EQ(spec->cold_after_ms, 90'000);
  EXPECT_EQ(spec->spares, 64);
  EXPECT_EQ(spec->memory_bytes, 1LL << 30);
  EXPECT_EQ(spec->pids_limit, 10);
  EXPECT_EQ(spec->cpus, 0.5);
  EXPECT_EQ(spec->timeout_ms, 24 * 3'600'000LL);
  EXPECT_THAT(spec->env, ElementsAre(Pair("A_1", "one = 1"), Pair("ZETA", "z")));
  EXPECT_EQ(spec->net, core::NetMode::kEgress);
  EXPECT_THAT(spec->allow, ElementsAre("api.example.com:443", "*.cdn.example.com:80"));
}

TEST_F(FunctionSpecTest, OtherValueForms) {
  absl::StatusOr<FunctionSpec> spec = Parse(
      "name = \"x\"\nentry = \"handler.py:main\"\nimage = \"python:3.12-slim\"\n"
      "cold_after = 0\ncode = \"" +
      dir_ + "/src/../\"\n[limits]\ncpu = 2\ntimeout = 5\n[net]\nmode = \"full\"\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->image.text, "python:3.12-slim");
  EXPECT_EQ(spec->cold_after_ms, 0);
  EXPECT_EQ(spec->code, dir_);  // absolute, and normalized
  EXPECT_EQ(spec->cpus, 2.0);
  EXPECT_EQ(spec->timeout_ms, 5000);  // a bare number of seconds
  EXPECT_EQ(spec->net, core::NetMode::kFull);

  for (const char* never : {"\"0\"", "\"0s\"", "\"0m\""}) {
    spec = Parse(absl::StrCat("name = \"x\"\nentry = \"handler.py:main\"\ncold_after = ", never));
    ASSERT_TRUE(spec.ok()) << spec.status();
    EXPECT_EQ(spec->cold_after_ms, 0) << never;
  }
}

TEST_F(FunctionSpecTest, RelativeBaseDirIsMadeAbsolute) {
  std::filesystem::path cwd = std::filesystem::current_path();
  ASSERT_EQ(chdir(dir_.c_str()), 0);
  absl::StatusOr<FunctionSpec> spec =
      ParseFunctionSpec("name = \"x\"\nentry = \"pkg/app.py:run\"\n", "x.toml", "src", policy_);
  std::filesystem::current_path(cwd);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->base_dir, dir_ + "/src");
  EXPECT_EQ(spec->code, dir_ + "/src");
}

TEST_F(FunctionSpecTest, RuntimePool) {
  absl::StatusOr<FunctionSpec> spec =
      Parse("name = \"py\"\npool = true\npreload = [\"numpy\"]\nspares = 4\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(spec->pool);
  EXPECT_EQ(spec->entry, "");
  EXPECT_THAT(spec->preload, ElementsAre("numpy"));
  EXPECT_EQ(spec->spares, 4);
}

TEST_F(FunctionSpecTest, ExecCommandAsStringOrArray) {
  absl::StatusOr<FunctionSpec> spec =
      Parse("name = \"e\"\nruntime = \"exec\"\nentry = \"  /bin/echo   hi\tthere \"\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->runtime, Runtime::kExec);
  EXPECT_THAT(spec->command, ElementsAre("/bin/echo", "hi", "there"));
  EXPECT_EQ(spec->entry, "/bin/echo hi there");

  spec = Parse("name = \"e\"\nruntime = \"exec\"\nentry = [\"/bin/sh\", \"-c\", \"echo a  b\"]\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_THAT(spec->command, ElementsAre("/bin/sh", "-c", "echo a  b"));
}

// A node function: FILE.js, .mjs or .cjs and a JavaScript name; a node pool.
TEST_F(FunctionSpecTest, NodeFunctionsAndPools) {
  WriteFile("handler.js", "exports.main = (event) => event;\n");
  WriteFile("src/pkg/app.mjs", "export async function $run(event) { return 1; }\n");
  WriteFile("src/pkg/old.cjs", "module.exports.run_it = () => 2;\n");
  absl::StatusOr<FunctionSpec> spec =
      Parse("name = \"js\"\nruntime = \"node\"\nentry = \"handler.js:main\"\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->runtime, Runtime::kNode);
  EXPECT_EQ(spec->entry, "handler.js:main");
  EXPECT_EQ(spec->handler_file, "handler.js");
  EXPECT_EQ(spec->handler_function, "main");
  EXPECT_FALSE(spec->pool);
  EXPECT_EQ(ToFunctionInfo(*spec).runtime, Runtime::kNode);
  EXPECT_STREQ(RuntimeName(Runtime::kNode), "node");
  EXPECT_EQ(ParseRuntime("node"), Runtime::kNode);

  spec = Parse("name = \"js\"\nruntime = \"node\"\nentry = \"src/pkg/app.mjs:$run\"\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->handler_file, "src/pkg/app.mjs");
  EXPECT_EQ(spec->handler_function, "$run");
  spec = Parse("name = \"js\"\nruntime = \"node\"\nentry = \"src/pkg/old.cjs:run_it\"\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->handler_file, "src/pkg/old.cjs");

  spec = Parse("name = \"jspool\"\nruntime = \"node\"\npool = true\nspares = 3\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(spec->pool);
  EXPECT_EQ(spec->entry, "");
  EXPECT_EQ(ToFunctionInfo(*spec).entry, "");

  // system packages go with an OCI image for node too (Debian's nodejs, say).
  spec = Parse(
      "name = \"js\"\nruntime = \"node\"\nentry = \"handler.js:main\"\n"
      "image = \"debian:12\"\nsystem = [\"nodejs\"]\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->system, std::vector<std::string>{"nodejs"});
}

TEST_F(FunctionSpecTest, NodeErrorsNameFileLineAndField) {
  WriteFile("handler.js", "exports.main = (event) => event;\n");
  WriteFile("requirements.txt", "tinypkg==1.0\n");
  const std::string head = "name = \"js\"\nruntime = \"node\"\n";  // lines 1-2
  const std::string entry = "entry = \"handler.js:main\"\n";
  const std::string form =
      " is not FILE.js:FUNCTION (FILE ending in .js, .mjs or .cjs; e.g. \"handler.js:main\")";
  const std::pair<std::string, std::string> refused[] = {
      {head, "hello.toml: entry: missing; use entry = \"FILE.js:FUNCTION\" (or pool = true)"},
      {head + "entry = \"handler.py:main\"\n", "hello.toml:3: entry: \"handler.py:main\"" + form},
      {head + "entry = \"handler.js\"\n", "hello.toml:3: entry: \"handler.js\"" + form},
      {head + "entry = \".js:main\"\n", "hello.toml:3: entry: \".js:main\"" + form},
      {head + "entry = \"handler.js:2main\"\n", "hello.toml:3: entry: \"handler.js:2main\"" + form},
      {head + "entry = \"handler.js:a-b\"\n", "hello.toml:3: entry: \"handler.js:a-b\"" + form},
      {head + "entry = \"../handler.js:main\"\n",
       "hello.toml:3: entry: \"../handler.js\" must be a relative path inside code (" + dir_ +
           ") without '..'"},
      {head + "entry = \"/etc/handler.js:main\"\n",
       "hello.toml:3: entry: \"/etc/handler.js\" must be a relative path inside code (" + dir_ +
           ") without '..'"},
      {head + "entry = \"other.mjs:main\"\n",
       "hello.toml:3: entry: \"other.mjs\" is not a file in " + dir_},
      {head + "pool = true\n" + entry,
       "hello.toml:4: entry: a runtime pool (pool = true) takes no entry: scripts arrive with "
       "requests"},
      {head + entry + "preload = [\"fs\"]\n",
       "hello.toml:4: preload: python only; a node handler's own require/import lines load with "
       "each worker before its request arrives"},
      {head + "pool = true\npreload = []\n",
       "hello.toml:4: preload: python only; a node handler's own require/import lines load with "
       "each worker before its request arrives"},
      {head + entry + "image = \"node:20\"\nrequirements = \"requirements.txt\"\n",
       "hello.toml:5: requirements: python only (a pip venv); a node function brings its "
       "node_modules in code"},
  };
  for (const auto& [text, message] : refused) EXPECT_EQ(ErrorOf(text), message) << text;
}

// Each bad spec with the exact message: file, line, field, what is wrong.
TEST_F(FunctionSpecTest, ErrorsNameFileLineAndField) {
  const std::string kEntry = "entry = \"handler.py:main\"\n";
  const std::string kHead = "name = \"hello\"\n" + kEntry;  // lines 1-2
  struct Case {
    std::string text;
    std::string message;
  };
  const Case cases[] = {
      {kHead + "[limits]\nmemory = \"12Q\"\n",
       "hello.toml:4: limits.memory: \"12Q\" is not a size (use 256M, 1G, ...)"},
      {kHead + "[limits]\nmemory = \"1M\"\n",
       "hello.toml:4: limits.memory: \"1M\" is less than the minimum, 4M"},
      {kHead + "[limits]\nmemory = 268435456\n",
       "hello.toml:4: limits.memory: expected a size such as \"256M\", found an integer"},
      {kHead + "[limits]\npids = 0\n", "hello.toml:4: limits.pids: 0 is out of range (1..4194304)"},
      {kHead + "[limits]\ncpu = 0.0\n",
       "hello.toml:4: limits.cpu: 0 is out of range (above 0, at most 1024)"},
      {kHead + "[limits]\ncpu = \"1\"\n",
       "hello.toml:4: limits.cpu: expected a number such as 0.5, found a string"},
      {kHead + "[limits]\ntimeout = \"25h\"\n",
       "hello.toml:4: limits.timeout: \"25h\" is more than the maximum, 24h"},
      {kHead + "[limits]\ntimeout = \"0\"\n",
       "hello.toml:4: limits.timeout: \"0\" is not a duration (use 500ms, 30s, 10m, 1h; at most "
       "7 days)"},
      {kHead + "cold_after = \"10 minutes\"\n",
       "hello.toml:3: cold_after: \"10 minutes\" is not a duration (use 500ms, 30s, 10m, 1h; at "
       "most 7 days)"},
      {kHead + "cold_after = \"8d\"\n",
       "hello.toml:3: cold_after: \"8d\" is not a duration (use 500ms, 30s, 10m, 1h; at most 7 "
       "days)"},
      {kHead + "cold_after = \"169h\"\n",
       "hello.toml:3: cold_after: \"169h\" is not a duration (use 500ms, 30s, 10m, 1h; at most 7 "
       "days)"},
      {kHead + "cold_after = true\n",
       "hello.toml:3: cold_after: expected a duration such as \"30s\", found a boolean"},
      {kHead + "spares = 0\n", "hello.toml:3: spares: 0 is out of range (1..64)"},
      {kHead + "spares = 65\n", "hello.toml:3: spares: 65 is out of range (1..64)"},
      {kHead + "spares = 2.0\n", "hello.toml:3: spares: expected an integer, found a float"},
      {kEntry, "hello.toml: name: missing; every function needs a name"},
      {"\n\nname = \"Hello\"\n" + kEntry,
       "hello.toml:3: name: \"Hello\" is not a valid name (1-63 characters of a-z, 0-9, '_' and "
       "'-', starting with a-z or 0-9)"},
      {"name = 7\n", "hello.toml:1: name: expected a string, found an integer"},
      {kHead + "image = \"dir:relative\"\n",
       "hello.toml:3: image: \"dir:relative\": dir: needs an absolute path"},
      {kHead + "image = \"dir:/nonexistent-zygo-dir\"\n",
       "hello.toml:3: image: \"dir:/nonexistent-zygo-dir\": /nonexistent-zygo-dir is not a "
       "directory"},
      {kHead + "runtime = \"pyhton\"\n",
       "hello.toml:3: runtime: \"pyhton\" is not a runtime (use \"python\", \"node\" or "
       "\"exec\")"},
      {"name = \"hello\"\n",
       "hello.toml: entry: missing; use entry = \"FILE.py:FUNCTION\" (or "
       "pool = true)"},
      {"name = \"hello\"\nentry = \"handler.py\"\n",
       "hello.toml:2: entry: \"handler.py\" is not FILE.py:FUNCTION (e.g. \"handler.py:main\")"},
      {"name = \"hello\"\nentry = \"handler.py:2main\"\n",
       "hello.toml:2: entry: \"handler.py:2main\" is not FILE.py:FUNCTION (e.g. "
       "\"handler.py:main\")"},
      {"name = \"hello\"\nentry = \"missing.py:main\"\n",
       "hello.toml:2: entry: \"missing.py\" is not a file in " + dir_},
      {"name = \"hello\"\nentry = \"src/../handler.py:main\"\n",
       "hello.toml:2: entry: \"src/../handler.py\" must be a relative path inside code (" + dir_ +
           ") without '..'"},
      {"name = \"hello\"\nentry = \"/etc/x.py:main\"\n",
       "hello.toml:2: entry: \"/etc/x.py\" must be a relative path inside code (" + dir_ +
           ") without '..'"},
      {"name = \"hello\"\npool = true\n" + kEntry,
       "hello.toml:3: entry: a runtime pool (pool = true) takes no entry: scripts arrive with "
       "requests"},
      {"name = \"hello\"\npool = \"yes\"\n",
       "hello.toml:2: pool: expected a boolean, found a string"},
      {kHead + "preload = [\"json\", \"os path\"]\n",
       "hello.toml:3: preload[1]: \"os path\" is not a module name"},
      {kHead + "preload = [\"json\",\n  3]\n",
       "hello.toml:4: preload[1]: expected a string, found an integer"},
      {"name = \"hello\"\nruntime = \"exec\"\n",
       "hello.toml: entry: missing; an exec function needs a command"},
      {"name = \"hello\"\nruntime = \"exec\"\nentry = \"   \"\n",
       "hello.toml:3: entry: the command is empty"},
      {"name = \"hello\"\nruntime = \"exec\"\nentry = []\n",
       "hello.toml:3: entry: the command is empty"},
      {"name = \"hello\"\nruntime = \"exec\"\nentry = 3\n",
       "hello.toml:3: entry: expected a command string or an array of strings, found an integer"},
      {"name = \"hello\"\nruntime = \"exec\"\nentry = \"x\"\npool = true\n",
       "hello.toml:4: pool: only the python and node runtimes have pools"},
      {"name = \"hello\"\nruntime = \"exec\"\nentry = \"x\"\npreload = []\n",
       "hello.toml:4: preload: only the python runtime preloads"},
      {kHead + "code = \"nope\"\n",
       "hello.toml:3: code: \"nope\": " + dir_ + "/nope does not exist"},
      {kHead + "code = \"handler.py\"\n",
       "hello.toml:3: code: \"handler.py\": " + dir_ + "/handler.py is not a directory"},
      {kHead + "code = \"\"\n",
       "hello.toml:3: code: is empty (use \".\" for the spec's directory)"},
      {kHead + "[env]\n\"1BAD\" = \"x\"\n",
       "hello.toml:4: env.1BAD: is not a valid environment variable name ([A-Za-z_][A-Za-z0-9_]*)"},
      {kHead + "[env]\nGOOD = 1\n", "hello.toml:4: env.GOOD: expected a string, found an integer"},
      {kHead + "[env]\nNUL = \"a\\u0000b\"\n", "hello.toml:4: env.NUL: contains a NUL byte"},
      {kHead + "env = \"A=B\"\n", "hello.toml:3: env: expected a table ([env]), found a string"},
      {kHead + "[net]\nmode = \"open\"\n",
       "hello.toml:4: net.mode: \"open\" is not a mode (use none, egress or full)"},
      {kHead + "[net]\nmode = \"host\"\n",
       "hello.toml:4: net.mode: \"host\" is refused: a warm function never shares the host's "
       "network; use \"egress\" with net.allow for named hosts, \"full\" for the internet, or "
       "`zygo run --net host --allow-host-net` for a one-shot command"},
      {kHead + "[net]\nmode = \"egress\"\n",
       "hello.toml:4: net.mode: \"egress\" needs at least one net.allow entry"},
      {kHead + "[net]\nallow = [\"a.example.com:443\"]\n",
       "hello.toml:4: net.allow: applies only to mode = \"egress\", not \"none\""},
      {kHead + "[net]\nmode = \"egress\"\nallow = [\"a.example.com:443\", \"1.2.3.4:80\"]\n",
       "hello.toml:5: net.allow[1]: "},
      {kHead + "[limits]\nmemory = \"1G\"\n[limits]\n", "hello.toml:5: invalid TOML: "},
      {"name = \"hello\nentry = 1\n", "hello.toml:1: invalid TOML: "},
  };
  for (const Case& c : cases) {
    std::string message = ErrorOf(c.text);
    if (c.message.back() == ' ') {
      EXPECT_THAT(message, testing::StartsWith(c.message)) << c.text;
    } else {
      EXPECT_EQ(message, c.message) << c.text;
    }
  }
}

// requirements and find_links: files of the code dir, with an OCI image; the pull policy.
TEST_F(FunctionSpecTest, RequirementsFindLinksAndPull) {
  WriteFile("requirements.txt", "tinypkg==1.0\n");
  std::filesystem::create_directories(dir_ + "/wheels");
  std::filesystem::create_symlink("/etc/hostname", dir_ + "/escape.txt");
  const std::string head = "name = \"app\"\nentry = \"handler.py:main\"\n";
  const std::string oci = head + "image = \"python:3.12-slim\"\n";  // lines 1-3
  absl::StatusOr<FunctionSpec> spec = Parse(
      oci + "requirements = \"requirements.txt\"\nfind_links = \"wheels\"\npull = \"always\"\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->requirements, dir_ + "/requirements.txt");
  EXPECT_EQ(spec->find_links, dir_ + "/wheels");
  EXPECT_EQ(spec->pull, runtime::PullPolicy::kAlways);
  EXPECT_EQ(Parse(oci)->pull, runtime::PullPolicy::kMissing);
  const std::pair<std::string, std::string> refused[] = {
      {head + "requirements = \"requirements.txt\"\n",
       "hello.toml:3: requirements: needs an OCI image (the venv is built with the image's own "
       "pip)"},
      {oci + "requirements = \"escape.txt\"\n",
       "hello.toml:4: requirements: \"escape.txt\" resolves outside code (/etc/hostname)"},
      {oci + "requirements = \"/etc/hostname\"\n",
       "hello.toml:4: requirements: \"/etc/hostname\" must be a path relative to code"},
      {oci + "requirements = \"wheels\"\n", "hello.toml:4: requirements: \"wheels\" is not a file"},
      {oci + "find_links = \"wheels\"\n", "hello.toml:4: find_links: goes with requirements"},
      {oci + "pull = \"sometimes\"\n",
       "hello.toml:4: pull: \"sometimes\" is not a pull policy (use \"missing\", \"always\" or "
       "\"never\")"},
  };
  for (const auto& [text, message] : refused) EXPECT_EQ(ErrorOf(text), message) << text;
}

// system: Debian package names, with an OCI image; sorted and each once.
TEST_F(FunctionSpecTest, SystemPackages) {
  const std::string head = "name = \"app\"\nentry = \"handler.py:main\"\n";
  const std::string oci = head + "image = \"python:3.12-slim\"\n";  // lines 1-3
  absl::StatusOr<FunctionSpec> spec =
      Parse(oci + "system = [\"zlib1g\", \"curl\", \"libpq5\", \"curl\"]\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->system, (std::vector<std::string>{"curl", "libpq5", "zlib1g"}));
  EXPECT_TRUE(Parse(oci)->system.empty());
  EXPECT_TRUE(Parse(oci + "system = []\n")->system.empty());
  const std::pair<std::string, std::string> refused[] = {
      {head + "system = [\"curl\"]\n",
       "hello.toml:3: system: needs an OCI image (the packages are installed with the image's "
       "own apt)"},
      {head + "image = \"dir:/\"\nsystem = [\"curl\"]\n",
       "hello.toml:4: system: needs an OCI image (the packages are installed with the image's "
       "own apt)"},
      {oci + "system = [\"curl\",\n  \"--allow-unauthenticated\"]\n",
       "hello.toml:5: system[1]: \"--allow-unauthenticated\" is not a Debian package name: "
       "lowercase letters, digits, '+', '-' and '.', at least two, starting with a letter or "
       "digit"},
      {oci + "system = [\"curl=7.88.1\"]\n",
       "hello.toml:4: system[0]: \"curl=7.88.1\" is not a Debian package name: lowercase "
       "letters, digits, '+', '-' and '.', at least two, starting with a letter or digit"},
  };
  for (const auto& [text, message] : refused) EXPECT_EQ(ErrorOf(text), message) << text;
  EXPECT_THAT(ErrorOf(oci + "system = \"curl\"\n"), testing::StartsWith("hello.toml:4: system: "));
}

TEST_F(FunctionSpecTest, UnknownKeysSuggestTheClosestKnownOne) {
  const std::string kHead = "name = \"hello\"\nentry = \"handler.py:main\"\n";
  EXPECT_EQ(ErrorOf(kHead + "[limits]\nmemroy = \"1G\"\n"),
            "hello.toml:4: limits.memroy: unknown key (did you mean \"memory\"?)");
  EXPECT_EQ(ErrorOf(kHead + "spraes = 3\n"),
            "hello.toml:3: spraes: unknown key (did you mean \"spares\"?)");
  EXPECT_EQ(ErrorOf("nam = \"hello\"\n"),
            "hello.toml:1: nam: unknown key (did you mean \"name\"?)");
  // A key that belongs in a table is pointed there.
  EXPECT_EQ(ErrorOf(kHead + "memory = \"1G\"\n"),
            "hello.toml:3: memory: unknown key (did you mean \"limits.memory\"?)");
  EXPECT_EQ(ErrorOf(kHead + "[limits]\nspares = 3\n"),
            "hello.toml:4: limits.spares: unknown key (did you mean \"spares\" at the top, before "
            "any [table]?)");
  EXPECT_EQ(ErrorOf(kHead + "[net]\nallowed = []\n"),
            "hello.toml:4: net.allowed: unknown key (did you mean \"allow\"?)");
  // Nothing close: no guess.
  EXPECT_EQ(ErrorOf(kHead + "frobnicate = 1\n"), "hello.toml:3: frobnicate: unknown key");
  EXPECT_EQ(ErrorOf(kHead + "[secrets]\n"), "hello.toml:3: secrets: unknown key");
}

// The three examples of docs/function-spec.md, as written there.
TEST_F(FunctionSpecTest, DocExamplesParse) {
  std::filesystem::create_directories(dir_ + "/tools");
  const char* examples[] = {R"(name = "hello"
entry = "handler.py:main"
preload = ["json"]
spares = 4

[limits]
memory = "128M"
timeout = "5s"

[env]
GREETING = "hi"
)",
                            R"(name = "py"
pool = true
preload = ["json", "re", "datetime"]
cold_after = "0"      # keep it warm

[limits]
memory = "512M"
timeout = "30s"
)",
                            R"(name = "wordcount"
runtime = "exec"
entry = ["/usr/bin/wc", "-w"]
code = "tools"

[limits]
memory = "64M"
pids = 8

[net]
mode = "egress"
allow = ["api.example.com:443"]
)"};
  for (const char* example : examples) {
    absl::StatusOr<FunctionSpec> spec = Parse(example);
    EXPECT_TRUE(spec.ok()) << spec.status();
  }
}

TEST(ValidateFunctionNameTest, AcceptsAndRefuses) {
  for (const std::string& good : {std::string("a"), std::string("0"), std::string("hello"),
                                  std::string("a-b_c9"), std::string(63, 'x')}) {
    EXPECT_TRUE(ValidateFunctionName(good).ok()) << good;
  }
  for (const std::string& bad :
       {std::string(""), std::string("-a"), std::string("_a"), std::string("A"), std::string("a.b"),
        std::string("../x"), std::string("a/b"), std::string(64, 'x')}) {
    EXPECT_FALSE(ValidateFunctionName(bad).ok()) << bad;
  }
}

TEST_F(FunctionSpecTest, FunctionInfoHasTheStaticFields) {
  absl::StatusOr<FunctionSpec> spec = Parse(
      "name = \"hello\"\nentry = \"handler.py:main\"\ncold_after = \"1m\"\n"
      "[limits]\nmemory = \"512M\"\ntimeout = \"2s\"\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  FunctionInfo info = ToFunctionInfo(*spec);
  EXPECT_EQ(info.name, "hello");
  EXPECT_EQ(info.image, "host");
  EXPECT_EQ(info.runtime, Runtime::kPython);
  EXPECT_EQ(info.entry, "handler.py:main");
  EXPECT_FALSE(info.pool);
  EXPECT_EQ(info.state, FunctionState::kCold);
  EXPECT_EQ(info.requests, 0);
  EXPECT_EQ(info.memory_bytes, 512LL << 20);
  EXPECT_EQ(info.timeout_ms, 2000);
  EXPECT_EQ(info.cold_after_ms, 60'000);
  EXPECT_EQ(info.spec_path, "hello.toml");

  spec = Parse("name = \"pool\"\npool = true\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  info = ToFunctionInfo(*spec);
  EXPECT_TRUE(info.pool);
  EXPECT_EQ(info.entry, "");
}

TEST_F(FunctionSpecTest, SandboxSpecCarriesLimitsEnvNetAndTheCodeVolume) {
  absl::StatusOr<FunctionSpec> spec = Parse(R"(
name = "e"
runtime = "exec"
entry = ["/bin/cat", "-"]
image = "dir:/"
[limits]
memory = "64M"
pids = 12
cpu = 1.5
[env]
B = "2"
A = "1"
[net]
mode = "egress"
allow = ["api.example.com:443"]
)");
  ASSERT_TRUE(spec.ok()) << spec.status();
  core::Spec sandbox = ToSandboxSpec(*spec);
  EXPECT_EQ(sandbox.root.Describe(), "dir:/");
  EXPECT_THAT(sandbox.argv, ElementsAre("/bin/cat", "-"));
  EXPECT_THAT(sandbox.env, ElementsAre("A=1", "B=2"));
  EXPECT_EQ(sandbox.memory_bytes, 64LL << 20);
  EXPECT_EQ(sandbox.pids_limit, 12);
  EXPECT_EQ(sandbox.cpus, 1.5);
  EXPECT_EQ(sandbox.timeout_ms, 0);
  EXPECT_EQ(sandbox.net, core::NetMode::kEgress);
  EXPECT_THAT(sandbox.allow, ElementsAre("api.example.com:443"));
  ASSERT_EQ(sandbox.volumes.size(), 1u);
  EXPECT_EQ(sandbox.volumes[0].source, dir_);
  EXPECT_EQ(sandbox.volumes[0].destination, "/code");
  EXPECT_TRUE(sandbox.volumes[0].read_only);
  EXPECT_EQ(sandbox.workdir, "/code");
  EXPECT_EQ(sandbox.hostname, "zygo");
  EXPECT_FALSE(sandbox.loosening.host_net());

  spec = Parse("name = \"p\"\nentry = \"handler.py:main\"\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_THAT(ToSandboxSpec(*spec).argv, IsEmpty());  // the caller starts the python agent
}

// `code` is bound read-only at /code: the host's root, a system directory or the
// supervisor's own state would be readable by the function.
TEST_F(FunctionSpecTest, CodeThatWouldShowTheHostIsRefusedAfterResolvingSymlinks) {
  const std::string kHead = "name = \"hello\"\nruntime = \"exec\"\nentry = \"/bin/true\"\n";
  std::filesystem::create_symlink("/", dir_ + "/rootfs");
  std::filesystem::create_symlink("/etc", dir_ + "/config");
  const std::string kSystem =
      " is a system directory; code must be a directory of its own (the function's project "
      "folder), not one the host's files live in";
  struct Case {
    std::string code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"/",
       "hello.toml:4: code: \"/\": / is the host's root directory; code must be a directory of "
       "its own (the function's project folder)"},
      {"/etc", "hello.toml:4: code: \"/etc\": /etc" + kSystem},
      {"/usr/lib", "hello.toml:4: code: \"/usr/lib\": /usr/lib" + kSystem},
      {"/usr/../etc", "hello.toml:4: code: \"/usr/../etc\": /etc" + kSystem},
      {"/proc/self/root",
       "hello.toml:4: code: \"/proc/self/root\": resolves to /; / is the "
       "host's root directory; code must be a directory of its own (the "
       "function's project folder)"},
      {"rootfs",
       "hello.toml:4: code: \"rootfs\": resolves to /; / is the host's root directory; "
       "code must be a directory of its own (the function's project folder)"},
      {"config", "hello.toml:4: code: \"config\": resolves to /etc; /etc" + kSystem},
      {"/etc/default",
       "hello.toml:4: code: \"/etc/default\": /etc/default lies inside /etc (the "
       "host's configuration and secrets)"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ErrorOf(kHead + "code = \"" + c.code + "\"\n"), c.message);
  }
  // Control: an ordinary directory beside them registers.
  absl::StatusOr<FunctionSpec> spec = Parse(kHead + "code = \"src\"\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->code, dir_ + "/src");
}

TEST_F(FunctionSpecTest, CodeMayNotSeeTheSupervisorsOwnDirectories) {
  const std::string kHead = "name = \"hello\"\nruntime = \"exec\"\nentry = \"/bin/true\"\n";
  std::filesystem::create_directories(dir_ + "/state/functions");
  std::filesystem::create_directories(dir_ + "/state/demo");
  policy_.private_dirs.push_back({dir_ + "/state", "the state directory", true});
  policy_.private_dirs.push_back({dir_ + "/src/pkg", "the socket directory", false});
  EXPECT_EQ(ErrorOf(kHead + "code = \"state/functions\"\n"),
            "hello.toml:4: code: \"state/functions\": " + dir_ +
                "/state/functions lies inside the state directory (" + dir_ + "/state)");
  EXPECT_EQ(
      ErrorOf(kHead + "code = \".\"\n"),
      "hello.toml:4: code: \".\": " + dir_ + " contains the state directory (" + dir_ + "/state)");
  EXPECT_EQ(ErrorOf(kHead + "code = \"src\"\n"), "hello.toml:4: code: \"src\": " + dir_ +
                                                     "/src contains the socket directory (" + dir_ +
                                                     "/src/pkg)");
  // The supervisor's own code (the demo's) is the one place inside the state dir.
  EXPECT_THAT(ErrorOf(kHead + "code = \"state/demo\"\n"), HasSubstr("lies inside the state"));
  policy_.own_code_dirs.push_back(dir_ + "/state/demo");
  EXPECT_TRUE(Parse(kHead + "code = \"state/demo\"\n").ok());
}

TEST_F(FunctionSpecTest, CodeRootsConfineWhereCodeComesFrom) {
  const std::string kHead = "name = \"hello\"\nruntime = \"exec\"\nentry = \"/bin/true\"\n";
  std::filesystem::create_directories(dir_ + "/other");
  policy_.roots = {dir_ + "/src", "/nonexistent-root"};
  EXPECT_EQ(ErrorOf(kHead + "code = \"other\"\n"),
            "hello.toml:4: code: \"other\": " + dir_ +
                "/other is outside the directories code may come from (zygo serve --code-root " +
                dir_ + "/src, --code-root /nonexistent-root)");
  EXPECT_TRUE(Parse(kHead + "code = \"src\"\n").ok());
  EXPECT_TRUE(Parse(kHead + "code = \"src/pkg\"\n").ok());
}

}  // namespace

}  // namespace zygo::supervisor
