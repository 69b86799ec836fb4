// The Node worker zygo-agent-node starts ahead of each request (agents/node/node_worker.h):
// it loads the handler, says it is ready on fd 3, runs exactly one request and exits, so
// every request starts from a fresh process. fd 3 is a stream socket to the agent; each
// message is a 4-byte little-endian length and that many bytes. stdout and stderr are
// pipes the agent relays. Started as `node --preserve-symlinks-main /proc/self/fd/4 MODE
// CODE_DIR ENTRY MAX_RESULT` (fd 4: a sealed memfd of this file), or, where Node ships no
// startup snapshot of its own, built once into one (`node --build-snapshot`) and started
// as `node --snapshot-blob /proc/self/fd/4 MODE CODE_DIR ...`.
'use strict';
const fs = require('fs');
const path = require('path');
const url = require('url');
const v8 = require('v8');
// Required when the worker starts: a snapshot does not carry these two over intact.
let vm, createRequire;

const CONTROL = 3;
// From the command line, read when the worker starts (not when a snapshot is built).
let mode, codeDir, entry, maxResult;

function writeAll(buffer) {
  for (let offset = 0; offset < buffer.length;) {
    offset += fs.writeSync(CONTROL, buffer, offset, buffer.length - offset);
  }
}

function send(bytes) {
  const head = Buffer.alloc(4);
  head.writeUInt32LE(bytes.length, 0);
  writeAll(Buffer.concat([head, bytes]));
}

function sendJson(value) {
  send(Buffer.from(JSON.stringify(value), 'utf8'));
}

function readExact(length) {
  const buffer = Buffer.alloc(length);
  for (let offset = 0; offset < length;) {
    const got = fs.readSync(CONTROL, buffer, offset, length - offset, null);
    if (got === 0) process.exit(0);  // the agent is gone: nothing to answer
    offset += got;
  }
  return buffer;
}

function receive() {
  return readExact(readExact(4).readUInt32LE(0));
}

class EntryError extends Error {}
class EventError extends Error {}
class ResultError extends Error {}
for (const type of [EntryError, EventError, ResultError]) type.prototype.name = type.name;

// An exception as the wire's Failed carries it: its class, message and stack.
function describe(error) {
  if (error instanceof Error) {
    const type = (error.constructor && error.constructor.name) || error.name || 'Error';
    return { type, message: String(error.message), stack: String(error.stack || '') };
  }
  return { type: 'Error', message: `a non-Error value was thrown: ${String(error)}`, stack: '' };
}

let answered = false;
function fail(error) {
  if (answered) return;
  answered = true;
  sendJson({ failed: describe(error) });
  process.exit(1);
}

// Whether the handler is an ES module: a worker started from a snapshot cannot import()
// one (Node's loader is not in a user snapshot), so the agent uses the snapshot only for
// CommonJS handlers and pools.
let esm = false;
function importModule(full) {
  esm = true;
  return import(url.pathToFileURL(full).href);
}

async function loadModule(file) {
  const full = path.resolve(codeDir, file);
  if (file.endsWith('.mjs')) return importModule(full);
  try {
    return createRequire(full)(full);
  } catch (error) {
    // A .js file of a package with "type": "module".
    if (error && error.code === 'ERR_REQUIRE_ESM') return importModule(full);
    throw error;
  }
}

async function loadHandler() {
  const colon = entry.lastIndexOf(':');
  const file = entry.slice(0, colon);
  const name = entry.slice(colon + 1);
  const loaded = await loadModule(file);
  let handler = loaded[name];
  if (typeof handler !== 'function' && loaded.default) handler = loaded.default[name];
  if (typeof handler !== 'function') {
    throw new EntryError(`${file} exports no function ${name}`);
  }
  return handler;
}

// A pool's script, a CommonJS module body that defines handler(event): as a function
// declaration, exports.handler, or module.exports itself.
function compileScript(code, digest) {
  const filename = path.join(codeDir, `${digest}.js`);
  const wrapper = vm.compileFunction(
      `${code}\n;return typeof handler === "function" ? handler : undefined;`,
      ['exports', 'require', 'module', '__filename', '__dirname'], { filename });
  const module = { exports: {} };
  const declared = wrapper.call(module.exports, module.exports, createRequire(filename), module,
                                filename, codeDir);
  if (typeof declared === 'function') return declared;
  if (typeof module.exports === 'function') return module.exports;
  if (typeof module.exports.handler === 'function') return module.exports.handler;
  throw new EntryError(`pool script ${digest} defines no handler(event) function`);
}

async function serve() {
  // Node 18 warns that these two are not verified in user snapshots, on every start from
  // one; they work for what the worker does with them (its tests run both ways), and the
  // warning would fill the function's log.
  const emitWarning = process.emitWarning;
  process.emitWarning = (warning, ...rest) => {
    if (!String(warning).includes('snapshot')) emitWarning.call(process, warning, ...rest);
  };
  vm = require('vm');
  ({ createRequire } = require('module'));
  process.emitWarning = emitWarning;
  let maxResultText;
  // The last four: after the script's path, or first when started from a snapshot.
  [mode, codeDir, entry, maxResultText] = process.argv.splice(-4);
  maxResult = Number(maxResultText);
  let handler = null;
  try {
    if (entry !== '') handler = await loadHandler();
  } catch (error) {
    sendJson({ load_failed: describe(error) });
    process.exit(1);
  }
  // Whether this Node starts from a snapshot of its own (the agent then never builds one).
  sendJson({ ready: true, esm,
             builtin_snapshot: Boolean(process.config.variables.node_use_node_snapshot) });
  if (mode === 'check') process.exit(0);

  const request = JSON.parse(receive().toString('utf8'));
  const eventText = receive().toString('utf8');
  process.on('uncaughtException', fail);
  process.on('unhandledRejection', fail);
  try {
    if (mode === 'pool') handler = compileScript(request.code, request.entry);
    let event = null;
    try {
      if (eventText.length > 0) event = JSON.parse(eventText);
    } catch (error) {
      throw new EventError(`the event is not JSON: ${error.message}`);
    }
    const value = await handler(event);
    let result;
    try {
      result = JSON.stringify(value === undefined ? null : value);
    } catch (error) {
      throw new ResultError(`the handler's return value is not JSON: ${error.message}`);
    }
    if (result === undefined) result = 'null';  // a function or a symbol
    if (Buffer.byteLength(result) > maxResult) {
      throw new ResultError(
          `the handler's result is ${Buffer.byteLength(result)} bytes of JSON; at most ${maxResult}`);
    }
    if (answered) return;
    answered = true;
    sendJson({ done: result });
    process.exit(0);
  } catch (error) {
    fail(error);
  }
}

// The modules most handlers use, loaded once into a snapshot (http cannot be: V8 cannot
// serialise its parser).
const SNAPSHOT_MODULES = ['crypto', 'events', 'os', 'util'];

if (v8.startupSnapshot && v8.startupSnapshot.isBuildingSnapshot()) {
  for (const name of SNAPSHOT_MODULES) require(name);
  v8.startupSnapshot.setDeserializeMainFunction(serve);
} else {
  serve();
}
