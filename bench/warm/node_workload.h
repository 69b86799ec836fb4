// What `zygo bench warm --runtime node` runs: handler.js, whose module requires sixteen
// Node builtins and whose async main(event) returns what HandlerSource's main returns
// (so HandlerResultMatches checks both). Pure text; no I/O.
#ifndef ZYGO_BENCH_WARM_NODE_WORKLOAD_H_
#define ZYGO_BENCH_WARM_NODE_WORKLOAD_H_

#include <string>
#include <vector>

namespace zygo::bench {

// The sixteen builtins handler.js requires: fs, path, util, events, url, crypto, os, http,
// https, zlib, stream, querystring, buffer, assert, string_decoder, timers.
const std::vector<std::string>& SixteenNodeBuiltins();

// handler.js (CommonJS): requires the sixteen; `exports.main = async (event) => {...}`
// returns {"n": n, "twice": 2n, "name": name, "variant": variant}.
std::string NodeHandlerSource(int variant);

// Where the function's handler is: "handler.js:main".
inline constexpr char kNodeEntry[] = "handler.js:main";

}  // namespace zygo::bench

#endif  // ZYGO_BENCH_WARM_NODE_WORKLOAD_H_
