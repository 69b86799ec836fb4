// What the warm-path benches run: the import-heavy Python handler, the specs that register
// it (as a function or a runtime pool), the pool's distinct scripts and the events sent.
// Pure text; no I/O.
#ifndef ZYGO_BENCH_WARM_WARM_WORKLOAD_H_
#define ZYGO_BENCH_WARM_WARM_WORKLOAD_H_

#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace zygo::bench {

// The sixteen standard modules every warm-path workload imports: the careful, low end of
// what a real script does (json, re, ssl, decimal, datetime, hashlib, urllib.request,
// base64, collections, csv, functools, itertools, math, pathlib, statistics, uuid).
const std::vector<std::string>& SixteenModules();

// handler.py: imports the sixteen, and `main(event)` returns a small dict built from the
// event ({"n": n, "twice": 2n, "name": name, "variant": variant}). `variant` makes
// distinct sources (for density: no two functions share a file).
std::string HandlerSource(int variant);

// The script `zygo bench embed` runs three ways: the sixteen imports at module level,
// `main(event)` prints one line, and running it as a program calls main(None).
std::string EmbedScriptSource();
inline constexpr char kEmbedLine[] = "embed: sixteen modules imported";

// A runtime-pool script: `handler(event)` returns {"script": index, "constant": "..."}, a
// constant no other index shares.
std::string PoolScriptSource(int index);

struct FunctionSpecOptions {
  std::string name;
  std::string entry;  // "handler.py:main"; empty with pool
  bool pool = false;
  bool preload_sixteen = false;
  int spares = 2;
  std::string runtime = "python";  // or "node" (entry "handler.js:main")
};

// The TOML for POST /v1/functions (`runtime` on the host image; code ".", resolved against
// the base_dir sent with it; never cold; 256M; 10 s timeout).
std::string FunctionSpecToml(const FunctionSpecOptions& options);

// The event of request `index`: {"n": index, "name": "bench"}.
std::string EventJson(int index);

// Whether a handler's result is what HandlerSource's main returns for EventJson(index),
// or what PoolScriptSource(script)'s handler returns (script >= 0).
bool HandlerResultMatches(const nlohmann::json& result, int index);
bool PoolResultMatches(const nlohmann::json& result, int script);

}  // namespace zygo::bench

#endif  // ZYGO_BENCH_WARM_WARM_WORKLOAD_H_
