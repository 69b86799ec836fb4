// A warm Python function on an OCI image from the image store runs the image's own Python:
// python-host (tools/images) is the host's Python copied into an image together with a
// module no host has, and the handler reports which libpython its process mapped.
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "supervisor/service_fixture.h"
#include "testing/harness.h"

namespace zygo::supervisor {
namespace {

// The Python the agent is built against, which python-host copies from the host.
constexpr char kHostPython[] = "/usr/bin/python3.11";
constexpr char kImageLibpython[] = "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0";

constexpr char kHandler[] = R"(import sys

def where(event):
    import zygo_image_marker
    print("hello from the " + zygo_image_marker.WHERE)
    mapped = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split(None, 5)  # address perms offset dev inode [path]
            if len(fields) == 6 and "libpython" in fields[5]:
                mapped.add((fields[5].strip(), int(fields[4])))
    return {
        "marker": zygo_image_marker.WHERE,
        "marker_file": zygo_image_marker.__file__,
        "version": list(sys.version_info[:3]),
        "executable": sys.executable,
        "prefix": sys.prefix,
        "libpython": [{"path": path, "inode": inode} for path, inode in sorted(mapped)],
    }
)";

// Inode numbers of the image's libpython in the store (its flattened root, and any layer
// that holds the file). Only the number is compared: on an overlay host, /proc/PID/maps
// shows the underlying device, stat() the overlay's.
std::vector<uint64_t> StoredLibpythonInodes(const std::string& store) {
  std::vector<uint64_t> inodes;
  const std::string suffix = kImageLibpython;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(store)) {
    const std::string path = entry.path().string();
    if (!entry.is_symlink() && entry.is_regular_file() && path.size() > suffix.size() &&
        path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0) {
      struct stat st;
      if (stat(path.c_str(), &st) == 0) inodes.push_back(st.st_ino);
    }
  }
  return inodes;
}

class WarmPythonImageTest : public ServiceFixture {};

TEST_F(WarmPythonImageTest, RunsTheImagesOwnPython) {
  UseOwnImageStore();
  WriteCode("where.py", kHandler);
  Up("name = \"where\"\nentry = \"where.py:where\"\nimage = \"python-host:test\"\n"
     "pull = \"never\"\n"
     "[limits]\ntimeout = \"10s\"\nmemory = \"128M\"\n");
  // The control: before the image is in the store, the function cannot warm, and says so.
  ExecReply missing = Call("where");
  EXPECT_FALSE(missing.status.ok());
  EXPECT_NE(missing.status.message().find("zygo pull"), std::string::npos) << missing.status;

  LoadTestImage("python-host", "python-host:test");

  ExecReply reply = Call("where");
  ASSERT_TRUE(reply.status.ok()) << reply.status;
  ASSERT_TRUE(reply.ok) << reply.error_type << ": " << reply.error_message << reply.traceback
                        << reply.stderr_data;
  const nlohmann::json result = nlohmann::json::parse(reply.result_json);
  RecordProperty("result", reply.result_json);  // in test.xml: what the image's Python said
  EXPECT_EQ(reply.stdout_data, "hello from the python-host image\n");

  // The marker module exists only in the image: the host's Python cannot import it (the
  // same command line does run and print its version below, so the attempt itself works).
  EXPECT_EQ(result["marker"], "python-host image") << reply.result_json;
  const std::string marker_file = result["marker_file"].get<std::string>();
  struct stat st;
  EXPECT_NE(stat(marker_file.c_str(), &st), 0) << marker_file << " exists on the host";
  testing::RunOptions host_options;
  host_options.want_outcome = false;
  testing::RunResult host_marker =
      testing::RunOnHost({kHostPython, "-I", "-c", "import zygo_image_marker"}, host_options);
  EXPECT_EQ(host_marker.exit_code, 1) << host_marker.err;
  EXPECT_NE(host_marker.err.find("No module named 'zygo_image_marker'"), std::string::npos)
      << host_marker.err;
  testing::RunResult host_version = testing::RunOnHost(
      {kHostPython, "-I", "-c", "import sys; print(list(sys.version_info[:3]))"}, host_options);
  ASSERT_EQ(host_version.exit_code, 0) << host_version.err;

  // The image's Python is a copy of the host's 3.11, so the same version, from /usr.
  EXPECT_EQ(result["version"], nlohmann::json::parse(host_version.out)) << reply.result_json;
  EXPECT_EQ(result["prefix"], "/usr") << reply.result_json;

  // Exactly one libpython is mapped: the image's file, not the host's one at the same path.
  ASSERT_EQ(result["libpython"].size(), 1u) << reply.result_json;
  const nlohmann::json& libpython = result["libpython"][0];
  EXPECT_EQ(libpython["path"], kImageLibpython);
  const uint64_t mapped_inode = libpython["inode"].get<uint64_t>();
  ASSERT_EQ(stat(kImageLibpython, &st), 0) << "the host's own libpython";
  EXPECT_NE(mapped_inode, st.st_ino) << "the sandbox mapped the host's libpython";
  std::vector<uint64_t> stored = StoredLibpythonInodes(image_store_);
  ASSERT_FALSE(stored.empty()) << "no libpython in " << image_store_;
  EXPECT_NE(std::find(stored.begin(), stored.end(), mapped_inode), stored.end())
      << "mapped inode " << mapped_inode << " is no libpython of the store";
}

}  // namespace
}  // namespace zygo::supervisor
