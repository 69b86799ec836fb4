// The client side of //cli:mcp_test: the official MCP TypeScript SDK's client drives
// `zygo mcp` over stdio against the real supervisor mcp_test.sh started; then raw lines
// (malformed JSON-RPC, unknown tools and methods, the 2026-07-28 revision) go to a second
// `zygo mcp` directly. Usage: node mcp_test.mjs ZYGO SOCKET CODE_DIR
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { test } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const [zygo, socket, codeDir] = process.argv.slice(2);
const serverArgs = ['mcp', '--socket', socket, '--code-dir', codeDir, '--timeout', '3s'];

let client;

test('the SDK client connects and lists the four tools', async () => {
  client = new Client({ name: 'zygo-mcp-test', version: '1.0.0' });
  await client.connect(new StdioClientTransport({ command: zygo, args: serverArgs }));
  assert.equal(client.getServerVersion().name, 'zygo');
  assert.ok(client.getServerCapabilities().tools);
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((tool) => tool.name).sort(),
                   ['call_function', 'list_functions', 'run_javascript', 'run_python']);
  for (const tool of tools) {
    assert.ok(tool.description.length > 50, tool.name);
    assert.equal(tool.outputSchema.type, 'object', tool.name);
  }
  const python = tools.find((tool) => tool.name === 'run_python');
  assert.deepEqual(python.inputSchema.required, ['code']);
  // No network here: the pools reach loopback alone.
  assert.equal(python.annotations.openWorldHint, false);
});

test('run_python: plain code gives what it printed and its last expression', async () => {
  const reply = await client.callTool({
    name: 'run_python',
    arguments: { code: 'import sys\nprint("hello")\nprint("warn", file=sys.stderr)\nevent["n"] * 6',
                 event: { n: 7 } },
  });
  assert.equal(reply.isError, false);
  const out = reply.structuredContent;
  assert.equal(out.ok, true);
  assert.equal(out.status, 'ok');
  assert.equal(out.result, 42);
  assert.equal(out.stdout, 'hello\n');
  assert.equal(out.stderr, 'warn\n');
  assert.deepEqual(JSON.parse(reply.content[0].text), out);
});

test('run_python: a handler is called with the event', async () => {
  const reply = await client.callTool({
    name: 'run_python',
    arguments: { code: 'def handler(event):\n    return {"hi": event["name"]}\n',
                 event: { name: 'Ada' } },
  });
  assert.deepEqual(reply.structuredContent.result, { hi: 'Ada' });
});

test('run_python: top-level await, and a value JSON cannot carry', async () => {
  let reply = await client.callTool({
    name: 'run_python',
    arguments: { code: 'import asyncio\nawait asyncio.sleep(0)\nlen([await asyncio.sleep(0, r) for r in "ab"])' },
  });
  assert.equal(reply.structuredContent.result, 2);
  reply = await client.callTool({ name: 'run_python', arguments: { code: '{1}' } });
  assert.equal(reply.structuredContent.result, '{1}');
});

test('run_python: an exception is a tool error with its traceback', async () => {
  const reply = await client.callTool({ name: 'run_python', arguments: { code: 'x = 1\n1 / 0' } });
  assert.equal(reply.isError, true);
  const out = reply.structuredContent;
  assert.equal(out.status, 'handler_error');
  assert.equal(out.error.type, 'ZeroDivisionError');
  assert.match(out.error.traceback, /File "<code>", line 2/);
});

test('run_python: no network, no state kept, its own /tmp', async () => {
  const code = [
    'import os, socket',
    'try:',
    '    socket.create_connection(("1.1.1.1", 53), timeout=2)',
    '    net = "connected"',
    'except OSError as error:',
    '    net = error.errno',
    'open("/tmp/mark", "w").write("x")',
    '[net, os.listdir("/tmp")]',
  ].join('\n');
  for (let i = 0; i < 2; ++i) {
    const reply = await client.callTool({ name: 'run_python', arguments: { code } });
    // ENETUNREACH: the sandbox's network namespace has loopback only.
    assert.deepEqual(reply.structuredContent.result, [101, ['mark']]);
  }
});

test('run_python: the timeout ends a call that runs too long', async () => {
  const reply = await client.callTool({
    name: 'run_python', arguments: { code: 'import time\nprint("started", flush=True)\ntime.sleep(30)' },
  });
  assert.equal(reply.isError, true);
  assert.equal(reply.structuredContent.status, 'timeout');
  assert.equal(reply.structuredContent.stdout, 'started\n');
});

test('run_javascript: plain code, a handler, top-level await, a thrown error', async () => {
  let reply = await client.callTool({
    name: 'run_javascript',
    arguments: { code: 'console.log("hello");\nconst n = event.n;\nn * 6', event: { n: 7 } },
  });
  assert.equal(reply.isError, false);
  assert.equal(reply.structuredContent.result, 42);
  assert.equal(reply.structuredContent.stdout, 'hello\n');

  reply = await client.callTool({
    name: 'run_javascript',
    arguments: { code: 'async function handler(event) { return { hi: event.name }; }',
                 event: { name: 'Ada' } },
  });
  assert.deepEqual(reply.structuredContent.result, { hi: 'Ada' });

  reply = await client.callTool({
    name: 'run_javascript',
    arguments: { code: 'const os = require("os");\nconst v = await Promise.resolve(os.EOL);\nreturn v.length' },
  });
  assert.equal(reply.structuredContent.result, 1);

  reply = await client.callTool({
    name: 'run_javascript', arguments: { code: 'null.x' },
  });
  assert.equal(reply.isError, true);
  assert.equal(reply.structuredContent.error.type, 'TypeError');
  assert.match(reply.structuredContent.error.traceback, /code\.js:1/);
});

test('calls run at once, each in its own process', async () => {
  const replies = await Promise.all([1, 2, 3, 4].map((n) => client.callTool({
    name: n % 2 ? 'run_python' : 'run_javascript',
    arguments: { code: n % 2 ? 'event * 2' : 'event * 2', event: n },
  })));
  assert.deepEqual(replies.map((reply) => reply.structuredContent.result), [2, 4, 6, 8]);
});

test('call_function and list_functions reach a registered function', async () => {
  const list = await client.callTool({ name: 'list_functions', arguments: {} });
  const names = list.structuredContent.functions.map((f) => f.name).sort();
  assert.deepEqual(names, ['greet', 'mcp-node', 'mcp-python']);
  const reply = await client.callTool({
    name: 'call_function', arguments: { name: 'greet', event: { name: 'Ada' } },
  });
  assert.equal(reply.isError, false);
  assert.equal(reply.structuredContent.result, 'hello, Ada');

  const unknown = await client.callTool({ name: 'call_function', arguments: { name: 'nope' } });
  assert.equal(unknown.isError, true);
  assert.equal(unknown.structuredContent.status, 'not_run');
  assert.equal(unknown.structuredContent.error.type, 'not_found');
});

test('a cancelled call gets no reply, and the next call is answered', async () => {
  const errors = [];
  client.onerror = (error) => errors.push(error);
  const abort = new AbortController();
  const call = client.callTool(
      { name: 'run_python', arguments: { code: 'import time\ntime.sleep(1)\n"late"' } },
      undefined, { signal: abort.signal });
  setTimeout(() => abort.abort('changed my mind'), 200);
  await assert.rejects(call);
  await new Promise((resolve) => setTimeout(resolve, 1500));
  const next = await client.callTool({ name: 'run_python', arguments: { code: '"next"' } });
  assert.equal(next.structuredContent.result, 'next');
  // The SDK reports a reply to an id it no longer waits for as an error.
  assert.deepEqual(errors.map((error) => error.message), []);
  client.onerror = undefined;
});

test('bad arguments are a tool error, an unknown tool a JSON-RPC error', async () => {
  const bad = await client.callTool({ name: 'run_python', arguments: { cod: 'print(1)' } });
  assert.equal(bad.isError, true);
  assert.match(bad.content[0].text, /Invalid arguments for run_python: unknown argument "cod"/);
  await assert.rejects(client.callTool({ name: 'no_such_tool', arguments: {} }),
                       (error) => error.code === -32602 && /Unknown tool/.test(error.message));
  const still = await client.callTool({ name: 'run_python', arguments: { code: '1 + 1' } });
  assert.equal(still.structuredContent.result, 2);
  await client.close();
});

// Sends each line to a fresh `zygo mcp` and returns the replies with an id, by id, once
// stdin is closed and the server has exited.
async function rawSession(lines, args = serverArgs) {
  const server = spawn(zygo, args, { stdio: ['pipe', 'pipe', 'inherit'] });
  const replies = [];
  const reader = createInterface({ input: server.stdout });
  reader.on('line', (line) => replies.push(JSON.parse(line)));
  for (const line of lines) server.stdin.write(line + '\n');
  server.stdin.end();
  const code = await new Promise((resolve) => server.on('exit', resolve));
  return { code, replies };
}

test('raw lines: malformed JSON-RPC gets errors and the server keeps serving', async () => {
  const { code, replies } = await rawSession([
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",' +
        '"capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}',
    '{"jsonrpc":"2.0","method":"notifications/initialized"}',
    '{this is not json',
    '[{"jsonrpc":"2.0","id":2,"method":"ping"}]',
    '{"jsonrpc":"2.0","id":3}',
    '[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[['.repeat(100),
    '{"jsonrpc":"2.0","id":4,"method":"no/such/method"}',
    '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"no_such_tool"}}',
    '{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"run_python","arguments":{"code":7}}}',
    '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{}}}',
    '\u0000\u00ff garbage',
    '{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"run_python","arguments":{"code":"6 * 7"}}}',
    '{"jsonrpc":"2.0","id":9,"method":"ping"}',
  ]);
  assert.equal(code, 0);
  const byId = new Map(replies.filter((r) => r.id !== null).map((r) => [r.id, r]));
  const anonymous = replies.filter((r) => r.id === null).map((r) => r.error.code);
  // The bad JSON, the batch, the deep nesting, the garbage.
  assert.deepEqual(anonymous.sort(), [-32700, -32700, -32700, -32600].sort());
  assert.equal(byId.get(1).result.protocolVersion, '2025-06-18');
  assert.equal(byId.get(3).error.code, -32600);  // an id, but no method
  assert.equal(byId.get(4).error.code, -32601);
  assert.equal(byId.get(5).error.code, -32602);
  assert.match(byId.get(5).error.message, /Unknown tool: no_such_tool/);
  // 2025-06-18 has invalid arguments as a protocol error (2025-11-25: a tool error).
  assert.equal(byId.get(6).error.code, -32602);
  assert.equal(byId.get(7).error.code, -32602);
  assert.equal(byId.get(8).result.structuredContent.result, 42);
  assert.deepEqual(byId.get(9).result, {});
});

test('raw lines: the 2026-07-28 revision, without initialize', async () => {
  const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' };
  const { code, replies } = await rawSession([
    JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: meta } }),
    JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: { _meta: meta } }),
    JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/call',
                     params: { _meta: meta, name: 'run_javascript', arguments: { code: '[1, 2].length' } } }),
    JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'tools/list',
                     params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2030-01-01' } } }),
  ]);
  assert.equal(code, 0);
  const byId = new Map(replies.map((r) => [r.id, r]));
  assert.ok(byId.get(1).result.supportedVersions.includes('2026-07-28'));
  assert.equal(byId.get(2).result.resultType, 'complete');
  assert.equal(byId.get(2).result.tools.length, 4);
  assert.equal(byId.get(3).result.resultType, 'complete');
  assert.equal(byId.get(3).result.structuredContent.result, 2);
  assert.equal(byId.get(4).error.code, -32022);
});

test('raw lines: without a supervisor a call is a tool error saying so', async () => {
  const args = ['mcp', '--socket', `${socket}.none`, '--code-dir', codeDir];
  const { code, replies } = await rawSession([
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_python","arguments":{"code":"1"}}}',
    '{"jsonrpc":"2.0","id":2,"method":"ping"}',
  ], args);
  assert.equal(code, 0);
  const byId = new Map(replies.map((r) => [r.id, r]));
  const out = byId.get(1).result;
  assert.equal(out.isError, true);
  assert.equal(out.structuredContent.status, 'not_run');
  assert.equal(out.structuredContent.error.type, 'unavailable');
  assert.match(out.structuredContent.error.message, /cannot reach the supervisor/);
  assert.deepEqual(byId.get(2).result, {});
});
