// The Node worker zygo-agent-node starts ahead of each request (agents/node/node_worker.h):
// it loads the handler, says it is ready on fd 3, runs exactly one request and exits, so
// every request starts from a fresh process. fd 3 is a stream socket to the agent; each
// message is a 4-byte little-endian length and that many bytes. stdout and stderr are
// pipes the agent relays. Started as `node --eval <this> MODE CODE_DIR ENTRY MAX_RESULT`.
'use strict';
const fs = require('fs');
const path = require('path');
const url = require('url');
const vm = require('vm');
const { builtinModules, createRequire } = require('module');
const requireHandler = require;

// --eval puts its script's CommonJS names on the global object, and every built-in module
// as a lazy getter (Node's setReal setter marks those, not process or crypto), some of them
// again once this script's body has run; a handler, an ES module above all, must see the
// globals a file run by `node` sees. Called before the handler loads.
function removeEvalGlobals() {
  for (const name of ['require', 'module', 'exports', '__filename', '__dirname']) {
    delete globalThis[name];
  }
  for (const name of builtinModules) {
    const property = Object.getOwnPropertyDescriptor(globalThis, name);
    if (property && property.configurable && property.set && property.set.name === 'setReal') {
      delete globalThis[name];
    }
  }
}

const CONTROL = 3;
const [mode, codeDir, entry, maxResultText] = process.argv.splice(1, 4);
const maxResult = Number(maxResultText);

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

async function loadModule(file) {
  const full = path.resolve(codeDir, file);
  if (file.endsWith('.mjs')) return import(url.pathToFileURL(full).href);
  try {
    return requireHandler(full);
  } catch (error) {
    // A .js file of a package with "type": "module".
    if (error && error.code === 'ERR_REQUIRE_ESM') return import(url.pathToFileURL(full).href);
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
  await new Promise(setImmediate);  // past what --eval does after this script's body
  removeEvalGlobals();
  let handler = null;
  try {
    if (entry !== '') handler = await loadHandler();
  } catch (error) {
    sendJson({ load_failed: describe(error) });
    process.exit(1);
  }
  sendJson({ ready: true });
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

serve();
