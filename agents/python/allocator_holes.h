// The free blocks CPython's small-object allocator keeps in the pools it is using, filled
// before a zygote forks. What a fork allocates next would otherwise go into those holes,
// one here and one there across hundreds of pools the zygote's pages share with every
// other fork: each first write copies a page, and the objects the fork made (a function
// zygote's whole handler module) end up scattered, so every request that touches them
// copies many pages again. Filled, the next allocations start pools of their own.
#ifndef ZYGO_AGENTS_PYTHON_ALLOCATOR_HOLES_H_
#define ZYGO_AGENTS_PYTHON_ALLOCATOR_HOLES_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "agents/python/python_api.h"

namespace zygo::agents::python {

// Block size -> free blocks in used pools, from the table sys._debugmallocstats() prints
// ("class size num-pools blocks-in-use avail-blocks" rows). Pure parsing.
std::map<size_t, int64_t> ParseAvailableBlocks(const std::string& stats);

// Reads the allocator's table (sys._debugmallocstats, which writes to fd 2, caught in a
// memfd) and takes every available block with PyObject_Malloc, never to be freed. Returns
// the bytes taken. Zygote only, with the GIL, before it forks; the process must not be
// writing to fd 2 from another thread meanwhile.
absl::StatusOr<int64_t> FillAllocatorHoles(const PythonApi& api);

}  // namespace zygo::agents::python

#endif  // ZYGO_AGENTS_PYTHON_ALLOCATOR_HOLES_H_
