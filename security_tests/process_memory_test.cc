// The host-side memory oracle on a child of the test's own: a needle it holds is found,
// also across a chunk boundary of a mapping, and one it does not hold is not.
#include "security_tests/process_memory.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "gtest/gtest.h"

namespace zygo::testing {
namespace {

constexpr size_t kNeedleSize = 24;

// Needle `seed`, computed where it is needed: made after the fork, it is in no memory but
// where each process puts it.
char NeedleByte(int seed, size_t i) { return static_cast<char>('a' + (seed * 7 + i * 11) % 26); }
std::string Needle(int seed) {
  std::string needle(kNeedleSize, '\0');
  for (size_t i = 0; i < kNeedleSize; ++i) needle[i] = NeedleByte(seed, i);
  return needle;
}

// The start of the mapping that holds `address`, by /proc/self/maps; 0 when none does.
uintptr_t MappingStart(uintptr_t address) {
  FILE* maps = std::fopen("/proc/self/maps", "r");
  if (maps == nullptr) return 0;
  unsigned long start = 0, end = 0;
  uintptr_t found = 0;
  char line[512];
  while (found == 0 && std::fgets(line, sizeof(line), maps) != nullptr) {
    if (std::sscanf(line, "%lx-%lx", &start, &end) == 2 && start <= address && address < end) {
      found = start;
    }
  }
  std::fclose(maps);
  return found;
}

// A child holding needle `seed` across a kMemoryChunkBytes boundary of one of its
// mappings (half before it, half after), until it is killed.
pid_t StartHolder(int seed) {
  int ready[2];
  if (pipe(ready) != 0) return -1;
  const pid_t child = fork();
  if (child != 0) {
    close(ready[1]);
    char byte;
    const bool held = child > 0 && read(ready[0], &byte, 1) == 1;
    close(ready[0]);
    return held ? child : -1;
  }
  const size_t size = 4 * kMemoryChunkBytes;
  char* region = static_cast<char*>(
      mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (region == MAP_FAILED) _exit(1);
  const uintptr_t start = MappingStart(reinterpret_cast<uintptr_t>(region));
  if (start == 0) _exit(2);
  // The first chunk boundary of the mapping at least half a needle into the region.
  const uintptr_t first = reinterpret_cast<uintptr_t>(region) + kNeedleSize;
  const uintptr_t boundary =
      start + (first - start + kMemoryChunkBytes - 1) / kMemoryChunkBytes * kMemoryChunkBytes;
  char* at = reinterpret_cast<char*>(boundary - kNeedleSize / 2);
  for (size_t i = 0; i < kNeedleSize; ++i) at[i] = NeedleByte(seed, i);
  if (write(ready[1], "r", 1) != 1) _exit(3);
  pause();
  _exit(0);
}

TEST(ProcessMemoryTest, FindsANeedleAcrossAChunkBoundaryAndNotOneItDoesNotHold) {
  const pid_t holder = StartHolder(1);
  ASSERT_GT(holder, 0);
  absl::StatusOr<bool> held = MemoryContainsAny(holder, {Needle(1)});
  absl::StatusOr<bool> other = MemoryContainsAny(holder, {Needle(2)});
  absl::StatusOr<bool> either = MemoryContainsAny(holder, {Needle(2), Needle(1)});
  kill(holder, SIGKILL);
  waitpid(holder, nullptr, 0);
  ASSERT_TRUE(held.ok()) << held.status();
  EXPECT_TRUE(*held) << "the needle across the boundary";
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_FALSE(*other) << "a needle the child never held";
  ASSERT_TRUE(either.ok()) << either.status();
  EXPECT_TRUE(*either);
}

TEST(ProcessMemoryTest, AGoneProcessOrNoNeedleIsAnError) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(0);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  EXPECT_FALSE(MemoryContainsAny(child, {Needle(1)}).ok());
  EXPECT_FALSE(MemoryContainsAny(getpid(), {}).ok());
  EXPECT_FALSE(MemoryContainsAny(getpid(), {""}).ok());
}

TEST(ProcessMemoryTest, DescendantsInFollowsTheParents) {
  const ProcessParents parents = {{10, 1}, {11, 10}, {12, 11}, {20, 1}, {21, 20}};
  EXPECT_EQ(DescendantsIn(parents, 10), (std::vector<pid_t>{11, 12}));
  EXPECT_EQ(DescendantsIn(parents, 20), (std::vector<pid_t>{21}));
  EXPECT_TRUE(DescendantsIn(parents, 12).empty());
}

}  // namespace
}  // namespace zygo::testing
