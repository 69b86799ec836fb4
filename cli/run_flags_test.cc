#include "cli/run_flags.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace zygo::cli {
namespace {

absl::StatusOr<RunOptions> Parse(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  return ParseRunFlags(static_cast<int>(argv.size()), argv.data());
}

TEST(ParseRunFlags, DockerWordsAndStopAtImage) {
  auto options = Parse(
      {"-e",   "A=1",      "--env", "B=2",          "-w", "/tmp",      "-v",  "/src:/dst:ro", "-m",
       "512m", "--cpus",   "0.5",   "--pids-limit", "64", "--timeout", "30s", "--hostname",   "box",
       "-u",   "1000:100", "host",  "ls",           "-v", "--timeout"});
  ASSERT_TRUE(options.ok()) << options.status();
  const core::Spec& spec = options->spec;
  EXPECT_EQ(spec.env, (std::vector<std::string>{"A=1", "B=2"}));
  EXPECT_EQ(spec.workdir, "/tmp");
  ASSERT_EQ(spec.volumes.size(), 1u);
  EXPECT_EQ(spec.volumes[0].source, "/src");
  EXPECT_EQ(spec.volumes[0].destination, "/dst");
  EXPECT_TRUE(spec.volumes[0].read_only);
  EXPECT_EQ(spec.memory_bytes, 512LL << 20);
  EXPECT_DOUBLE_EQ(spec.cpus, 0.5);
  EXPECT_EQ(spec.pids_limit, 64);
  EXPECT_EQ(spec.timeout_ms, 30'000);
  EXPECT_EQ(spec.hostname, "box");
  EXPECT_EQ(spec.uid, 1000u);
  EXPECT_EQ(spec.gid, 100u);
  EXPECT_EQ(options->image.kind, runtime::ImageSource::Kind::kHost);
  // The command's own flags are the command's.
  EXPECT_EQ(spec.argv, (std::vector<std::string>{"ls", "-v", "--timeout"}));
}

TEST(ParseRunFlags, DefaultsAreTight) {
  auto options = Parse({"host", "/bin/true"});
  ASSERT_TRUE(options.ok());
  EXPECT_EQ(options->spec.memory_bytes, 256LL << 20);
  EXPECT_EQ(options->spec.pids_limit, 128);
  EXPECT_DOUBLE_EQ(options->spec.cpus, 1.0);
  EXPECT_EQ(options->spec.timeout_ms, 60'000);
  EXPECT_FALSE(options->spec.loosening.unlimited());
  EXPECT_FALSE(options->spec.loosening.host_net());
  EXPECT_TRUE(options->spec.volumes.empty());
}

TEST(ParseRunFlags, OnlyAllowFlagsLoosen) {
  auto options = Parse({"--allow-unlimited", "--allow-host-net", "host", "/bin/true"});
  ASSERT_TRUE(options.ok());
  EXPECT_TRUE(options->spec.loosening.unlimited());
  EXPECT_TRUE(options->spec.loosening.host_net());
}

TEST(ParseRunFlags, NetAndAllow) {
  auto options = Parse(
      {"--net", "egress", "--allow", "a.test:443", "--allow", "*.b.test:80", "host", "/bin/true"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->spec.net, core::NetMode::kEgress);
  EXPECT_EQ(options->spec.allow, (std::vector<std::string>{"a.test:443", "*.b.test:80"}));
  auto none = Parse({"host", "/bin/true"});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->spec.net, core::NetMode::kNone);
  EXPECT_FALSE(Parse({"--net", "bogus", "host", "/bin/true"}).ok());
}

TEST(ParseRunFlags, SystemPackagesAreNamesForAnOciImage) {
  auto options = Parse({"--system", "curl", "--system", "libpq5", "python:3.12-slim", "true"});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->system, (std::vector<std::string>{"curl", "libpq5"}));
  EXPECT_EQ(Parse({"--system", "-y", "python:3.12-slim", "true"}).status().message(),
            "--system: \"-y\" is not a Debian package name: lowercase letters, digits, '+', '-' "
            "and '.', at least two, starting with a letter or digit");
  EXPECT_EQ(Parse({"--system", "curl", "host", "true"}).status().message(),
            "--system needs an OCI image (its packages are installed with the image's own apt)");
}

TEST(ParseRunFlags, BadInputNamesTheProblem) {
  struct Case {
    std::vector<std::string> args;
    std::string message_part;
  };
  for (const Case& c : std::vector<Case>{
           {{"--bogus", "host", "true"}, "unknown flag --bogus"},
           {{"-m", "12q", "host", "true"}, "unknown unit 'q'"},
           {{"--cpus", "-1", "host", "true"}, "invalid number '-1'"},
           {{"--pids-limit", "0", "host", "true"}, "--pids-limit '0'"},
           {{"--timeout", "soon", "host", "true"}, "invalid duration 'soon'"},
           {{"-v", "/only-source", "host", "true"}, "expected SRC:DST"},
           {{"-v", "/a:/b:rx", "host", "true"}, "mode must be ro or rw"},
           {{"-u", "root", "host", "true"}, "must be a number"},
           {{"-m"}, "needs a value"},
           {{}, "missing IMAGE"},
           {{"host"}, "missing CMD"},
       }) {
    auto options = Parse(c.args);
    ASSERT_FALSE(options.ok()) << c.message_part;
    EXPECT_NE(options.status().message().find(c.message_part), std::string::npos)
        << options.status().message() << " should mention " << c.message_part;
  }
}

}  // namespace
}  // namespace zygo::cli
