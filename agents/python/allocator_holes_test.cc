// The allocator's free blocks, read and filled in a real interpreter (the host's libpython).
#include "agents/python/allocator_holes.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <numeric>
#include <string>

#include "agents/python/interpreter.h"
#include "agents/python/python_api.h"

namespace zygo::agents::python {
namespace {

constexpr char kTable[] = R"(Small block threshold = 512, in 32 size classes.

class   size   num pools   blocks in use  avail blocks
-----   ----   ---------   -------------  ------------
    0     16           1             160           861
    3     64          92           23227           233
    5     96          17            2878             0
   31    512           3              84             9

# arenas allocated total           =                    6
)";

TEST(AllocatorHolesTest, ReadsTheAvailableBlocksOfEachSizeClass) {
  const std::map<size_t, int64_t> available = ParseAvailableBlocks(kTable);
  const std::map<size_t, int64_t> want = {{16, 861}, {64, 233}, {512, 9}};
  EXPECT_EQ(available, want);
  EXPECT_TRUE(ParseAvailableBlocks("not the table at all\n").empty());
}

int64_t AvailableBlocks(const PythonApi& api) {
  // The same table FillAllocatorHoles reads, read here the same way.
  int capture = ::memfd_create("test-mallocstats", MFD_CLOEXEC);
  int saved = ::dup(2);
  ::dup2(capture, 2);
  PyObject* done = api.PyObject_CallObject(api.PySys_GetObject("_debugmallocstats"), nullptr);
  ::dup2(saved, 2);
  ::close(saved);
  if (done != nullptr) api.Py_DecRef(done);
  std::string text(1 << 16, '\0');
  const ssize_t n = ::pread(capture, text.data(), text.size(), 0);
  ::close(capture);
  text.resize(n > 0 ? static_cast<size_t>(n) : 0);
  const std::map<size_t, int64_t> available = ParseAvailableBlocks(text);
  return std::accumulate(available.begin(), available.end(), int64_t{0},
                         [](int64_t sum, const auto& entry) { return sum + entry.second; });
}

TEST(AllocatorHolesTest, AfterTheFillNoUsedPoolHasAFreeBlock) {
  absl::StatusOr<std::string> library = FindLibpython();
  ASSERT_TRUE(library.ok()) << library.status();
  absl::StatusOr<PythonApi> api = LoadPythonApi(*library);
  ASSERT_TRUE(api.ok()) << api.status();
  absl::StatusOr<Interpreter> interpreter = Interpreter::Start(*api);
  ASSERT_TRUE(interpreter.ok()) << interpreter.status();
  ASSERT_TRUE(interpreter->ImportModules({"json", "decimal", "email.message"}).ok());
  // The control: imports leave free blocks behind in the pools they used.
  const int64_t before = AvailableBlocks(*api);
  ASSERT_GT(before, 100);
  absl::StatusOr<int64_t> filled = FillAllocatorHoles(*api);
  ASSERT_TRUE(filled.ok()) << filled.status();
  EXPECT_GE(*filled, before * 16);
  EXPECT_EQ(AvailableBlocks(*api), 0);
}

}  // namespace
}  // namespace zygo::agents::python
