// The spawn-per-request peer of `zygo bench warm --runtime node`: what a naive embedder
// does, one unsandboxed `node` per request. Requires the handler file (and with it the same
// builtins), calls the function with the event, awaits it, prints one line of JSON (the
// reply shape of bench/warm/node_vm_peer.js and prefork_peer.py) and exits.
//
// Usage: node node_spawn_runner.js HANDLER_FILE FUNCTION EVENT_JSON
// zygo embeds this file (bench/warm/BUILD.bazel: node_peer_sources_h).
"use strict";
const path = require("path");

function errorReply(error) {
  const type = error && error.name ? error.name : "Error";
  return { ok: false, error: { type, message: String(error && error.message) } };
}

async function main() {
  const [handlerFile, functionName, eventJson] = process.argv.slice(2);
  let reply;
  try {
    const handler = require(path.resolve(handlerFile))[functionName];
    reply = { ok: true, result: await handler(JSON.parse(eventJson)) };
  } catch (error) {  // the handler's failure is the reply, as in Zygo
    reply = errorReply(error);
  }
  process.stdout.write(JSON.stringify(reply) + "\n");
}

main();
