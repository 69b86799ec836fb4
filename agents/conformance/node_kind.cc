// The Node agent's entry in the conformance suite: the same operations as the Python
// handler (agent_kinds.h), in JavaScript. Error classes carry the names the suite checks
// (ZeroDivisionError, PermissionError, KeyError), since JavaScript has none of them.
#include <limits.h>
#include <stdlib.h>

#include "absl/strings/str_cat.h"
#include "agents/conformance/agent_kinds.h"

namespace zygo::agents::conformance {
namespace {

constexpr char kNodeHandler[] = R"js('use strict';
const childProcess = require('child_process');
const crypto = require('crypto');
const fs = require('fs');
const os = require('os');

class ZeroDivisionError extends Error {}
class PermissionError extends Error {}
for (const type of [ZeroDivisionError, PermissionError]) type.prototype.name = type.name;

function crc32(text) {
  let crc = 0xFFFFFFFF;
  for (const byte of Buffer.from(text, 'utf8')) {
    crc ^= byte;
    for (let bit = 0; bit < 8; ++bit) crc = (crc >>> 1) ^ (0xEDB88320 & -(crc & 1));
  }
  return (~crc) >>> 0;
}

// An EACCES/EPERM as the suite names it.
function permitted(action) {
  try {
    return action();
  } catch (error) {
    if (error.code === 'EACCES' || error.code === 'EPERM') throw new PermissionError(error.message);
    throw error;
  }
}

exports.handle = async (event) => {
  if (event === null || typeof event !== 'object' || Array.isArray(event) || !('op' in event)) {
    return event;
  }
  switch (event.op) {
    case 'print':
      console.log('hello from the handler');
      console.error('to stderr');
      return 'printed';
    case 'raise':
      throw new ZeroDivisionError('division by zero');  // RAISE_LINE
    case 'set':
      return { big: 10n };
    case 'random':
      return { random: Math.random(), uuid: crypto.randomUUID() };
    case 'tmpdir': {
      const tmp = os.tmpdir();
      const shell = childProcess.execFileSync('/bin/sh', ['-c', 'printf %s "$TMPDIR"']);
      return { gettempdir: tmp, environ: process.env.TMPDIR, c_environ: shell.toString(),
               listing: fs.readdirSync(tmp).sort() };
    }
    case 'write':
      permitted(() => fs.writeFileSync(event.path, 'x'));
      return 'written';
    case 'kill':
      permitted(() => process.kill(event.pid, event.signal));
      return 'sent';
    case 'exit':
      process.exit(event.code);
    case 'measure': {
      const links = fs.readdirSync('/proc/self/fd').map((fd) => {
        try { return fs.readlinkSync(`/proc/self/fd/${fd}`); } catch { return ''; }
      });
      return { length: event.blob.length, crc32: crc32(event.blob),
               event_fd_open: links.some((link) => link.includes('zygo-event')) };
    }
    default:
      throw new Error(`unknown op ${event.op}`);
  }
};
)js";

constexpr char kNodePoolScript[] = R"js(function handler(event) {
  return { doubled: event.x * 2 };
}
)js";

constexpr char kNodePoolScriptRaising[] = R"js(class KeyError extends Error {}
KeyError.prototype.name = 'KeyError';
function handler(event) {
  throw new KeyError('no such thing');  // RAISE_LINE
}
)js";

std::string NodeAgentBinary() {
  char resolved[PATH_MAX];
  const char* relative = "agents/node/zygo-agent-node";
  return ::realpath(relative, resolved) != nullptr ? resolved : relative;
}

AgentCommand NodeFunctionMode(const std::string& dir) {
  return {NodeAgentBinary(),
          {"--fd", "3", "--entry", "handler.js:handle", "--code-dir", dir},
          {},
          {"NODE_OPTIONS"}};
}

AgentCommand NodePoolMode(const std::string& dir) {
  return {NodeAgentBinary(), {"--pool", "--code-dir", dir}, {}, {"NODE_OPTIONS"}};
}

// The same with --snapshot on: workers start from a snapshot of worker.js even where Node
// ships its own (zygo-agent-node uses one by itself only where it does not).
AgentCommand NodeSnapshotFunctionMode(const std::string& dir) {
  AgentCommand command = NodeFunctionMode(dir);
  command.args.insert(command.args.end(), {"--snapshot", "on"});
  return command;
}

AgentCommand NodeSnapshotPoolMode(const std::string& dir) {
  AgentCommand command = NodePoolMode(dir);
  command.args.insert(command.args.end(), {"--snapshot", "on"});
  return command;
}

// A V8 stack frame: "    at handle (/dir/handler.js:47:13)".
std::string NodeFrameAt(const std::string& file, int line) {
  return absl::StrCat(file, ":", line, ":");
}

}  // namespace

AgentKind NodeAgentKind() {
  AgentKind kind{"node",          "handler.js",           kNodeHandler,
                 kNodePoolScript, kNodePoolScriptRaising, NodeFunctionMode,
                 NodePoolMode};
  kind.script_extension = ".js";
  kind.frame_at = NodeFrameAt;
  kind.unencodable = "BigInt";
  kind.numbers_are_doubles = true;
  kind.reports_touched = false;
  kind.compiles_scripts = false;
  // A worker is a fresh node (~0.1 s of CPU on these VMs); a spare answers the Pong once
  // its worker has loaded the handler, so only the count is smaller.
  kind.latency_requests = 20;
  return kind;
}

AgentKind NodeSnapshotAgentKind() {
  AgentKind kind = NodeAgentKind();
  kind.name = "node_snapshot";
  kind.hello_kind = "node";
  kind.function_mode = NodeSnapshotFunctionMode;
  kind.pool_mode = NodeSnapshotPoolMode;
  return kind;
}

}  // namespace zygo::agents::conformance
