// The in-process peer of `zygo bench warm --runtime node`: n8n's shape for its Code node
// (one long-lived Node process runs every task, each task's code in a new V8 context with
// vm.runInNewContext). Trusted code only: no isolation between tasks beyond the context,
// every task shares the process's heap, event loop and require cache.
//
// A unix-socket server; a task is a line of JSON (the event), its reply the next line:
// {"ok": true, "result": ...} or {"ok": false, "error": {...}}. Each task runs the handler
// file's source in a new context with its own `module`/`exports`, the process's `require`
// and `console`, then awaits module.exports[FUNCTION](event). Tasks of one connection run
// in order; connections run concurrently.
//
// Usage: node node_vm_peer.js SOCKET HANDLER_FILE FUNCTION
// Stops on SIGTERM. zygo embeds this file (bench/warm/BUILD.bazel: node_peer_sources_h).
"use strict";
const fs = require("fs");
const net = require("net");
const path = require("path");
const vm = require("vm");

const [socketPath, handlerFile, functionName] = process.argv.slice(2);
const handlerPath = path.resolve(handlerFile);
const source = fs.readFileSync(handlerPath, "utf8");

async function runTask(eventJson) {
  const event = JSON.parse(eventJson);
  const module = { exports: {} };
  const context = {
    module,
    exports: module.exports,
    require,
    console,
    __filename: handlerPath,
    __dirname: path.dirname(handlerPath),
  };
  vm.runInNewContext(source, context, { filename: handlerPath });
  return await module.exports[functionName](event);
}

function errorReply(error) {
  const type = error && error.name ? error.name : "Error";
  return { ok: false, error: { type, message: String(error && error.message) } };
}

function serve(connection) {
  let buffered = "";
  let queue = Promise.resolve();
  connection.setEncoding("utf8");
  connection.on("data", (chunk) => {
    buffered += chunk;
    let newline;
    while ((newline = buffered.indexOf("\n")) >= 0) {
      const line = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      queue = queue.then(async () => {
        let reply;
        try {
          reply = { ok: true, result: await runTask(line) };
        } catch (error) {
          reply = errorReply(error);
        }
        connection.write(JSON.stringify(reply) + "\n");
      });
    }
  });
  connection.on("error", () => connection.destroy());
}

const server = net.createServer(serve);
server.listen(socketPath, () => console.log("vm peer: ready on", socketPath));
process.on("SIGTERM", () => process.exit(0));
