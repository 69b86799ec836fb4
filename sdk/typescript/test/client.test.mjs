// Every call of the SDK against a real supervisor, and each typed error produced by it:
// an unknown function, a bad spec, an event over the limit, a handler's exception (Python
// and JavaScript), a timeout, an oom, a 429 from a full queue, no supervisor at all.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import * as http from "node:http";
import { mkdtempSync, rmSync } from "node:fs";

import {
  ApiError,
  Client,
  ExecError,
  HandlerError,
  InvalidArgumentError,
  NotFoundError,
  OutOfMemoryError,
  TimeoutError,
  TooManyRequestsError,
  UnavailableError,
  ZygoError,
  defaultSocketPathFor,
  resolveSocketPath,
  scriptDigest,
} from "../dist/esm/index.js";
import { Supervisor, skipReason, withFullQueue } from "./supervisor.mjs";

const skip = skipReason();

const PYTHON = `import sys, time

def hello(event):
    print("saying hello to", event["name"])
    print("to stderr", file=sys.stderr)
    return {"greeting": "hello, " + event["name"]}

def echo(event):
    return event

def size(event):
    return len(event)

def boom(event):
    raise ValueError("no greeting today")

def slow(event):
    print("started", flush=True)
    time.sleep(event)
    return "woke"

def hog(event):
    return len(bytearray(512 * 1024 * 1024))
`;

const NODE = `exports.greet = async (event) => {
  console.log("saying hello to " + event.name);
  return { greeting: "hello, " + event.name };
};
exports.fail = () => {
  throw new TypeError("no greeting today");
};
`;

describe("a real supervisor", { skip }, () => {
  let supervisor;
  let zygo;

  before(async () => {
    supervisor = await Supervisor.start();
    supervisor.write("handler.py", PYTHON);
    supervisor.write("handler.js", NODE);
    zygo = new Client({ socketPath: supervisor.socket });
    const python = (name, entry, limits = "") =>
      supervisor.spec(name, `entry = "handler.py:${entry}"\n[limits]\ntimeout = "2s"\nmemory = "64M"\n${limits}`);
    for (const [name, entry] of [["hello", "hello"], ["echo", "echo"], ["size", "size"], ["boom", "boom"], ["slow", "slow"], ["hog", "hog"]]) {
      await zygo.upFile(python(name, entry));
    }
    await zygo.upFile(supervisor.spec("greet", `runtime = "node"\nentry = "handler.js:greet"\n`));
    await zygo.upFile(supervisor.spec("fail", `runtime = "node"\nentry = "handler.js:fail"\n`));
    await zygo.upFile(supervisor.spec("pypool", "pool = true\n"));
  });

  after(async () => {
    zygo?.close();
    await supervisor?.stop();
  });

  test("health", async () => {
    assert.equal(await zygo.health(), true);
  });

  test("exec a Python function: result, stdout, stderr, outcome, timings", async () => {
    const reply = await zygo.exec("hello", { name: "Ada" });
    assert.equal(reply.ok, true);
    assert.deepEqual(reply.result, { greeting: "hello, Ada" });
    assert.equal(reply.error, null);
    assert.equal(reply.stdout, "saying hello to Ada\n");
    assert.equal(reply.stderr, "to stderr\n");
    assert.equal(reply.stdoutTruncated, false);
    assert.equal(reply.outcome.status, "ok");
    assert.equal(reply.outcome.exitCode, 0);
    assert.equal(reply.outcome.timedOut, false);
    assert.ok(reply.outcome.wallMs > 0);
    assert.ok(reply.timingsUs.total >= reply.timingsUs.run, JSON.stringify(reply.timingsUs));
  });

  test("exec a Node function", async () => {
    const reply = await zygo.exec("greet", { name: "Ada" });
    assert.deepEqual(reply.result, { greeting: "hello, Ada" });
    assert.equal(reply.stdout, "saying hello to Ada\n");
  });

  test("events: any JSON value; none is null", async () => {
    for (const event of [[1, "two", { three: 3 }], "text", 42, null, { unicode: "żółw ✓" }]) {
      assert.deepEqual((await zygo.exec("echo", event)).result, event);
    }
    assert.equal((await zygo.exec("echo")).result, null);
  });

  test("functions() lists what up registered", async () => {
    const listed = await zygo.functions();
    const hello = listed.find((f) => f.name === "hello");
    assert.ok(hello, JSON.stringify(listed));
    assert.equal(hello.runtime, "python");
    assert.equal(hello.entry, "handler.py:hello");
    assert.equal(hello.memoryBytes, 64 * 1024 * 1024);
    assert.equal(hello.timeoutMs, 2000);
    assert.equal(listed.find((f) => f.name === "greet")?.runtime, "node");
  });

  test("up from text with baseDir, then down", async () => {
    const info = await zygo.up(`name = "texty"\nentry = "handler.py:echo"\n`, {
      origin: "texty.toml",
      baseDir: supervisor.code,
    });
    assert.equal(info.name, "texty");
    assert.equal(info.runtime, "python");
    assert.equal((await zygo.exec("texty", 7)).result, 7);
    await zygo.down("texty");
    assert.ok(!(await zygo.functions()).some((f) => f.name === "texty"));
    await assert.rejects(zygo.exec("texty", 7), NotFoundError);
  });

  test("a Python runtime pool: scripts.put and exec by digest; pool.run of a source", async () => {
    const source = "def handler(event):\n    return event * 2\n";
    const digest = await zygo.scripts.put(source);
    assert.equal(digest, scriptDigest(source));
    assert.match(digest, /^sha256:[0-9a-f]{64}$/);
    assert.equal((await zygo.exec("pypool", 21, { script: digest })).result, 42);
    assert.equal((await zygo.pool.run("pypool", source, 5)).result, 10);
    const fresh = `def handler(event):\n    return ["fresh", ${Date.now()}, event]\n`;
    assert.deepEqual((await zygo.pool.run("pypool", Buffer.from(fresh), 1)).result.slice(-1), [1]);
    const other = "def handler(event):\n    raise KeyError(event)\n";
    await assert.rejects(zygo.pool.run("pypool", other, "k"), (error) => {
      assert.ok(error instanceof HandlerError);
      assert.equal(error.type, "KeyError");
      return true;
    });
  });

  test("a Node runtime pool", async () => {
    await zygo.upFile(supervisor.spec("jspool", `runtime = "node"\npool = true\n`));
    const script = "function handler(event) { return { doubled: event * 2 }; }\n";
    assert.deepEqual((await zygo.pool.run("jspool", script, 21)).result, { doubled: 42 });
  });

  test("an exec function's stdin", async () => {
    await zygo.upFile(supervisor.spec("count", `runtime = "exec"\nentry = ["/usr/bin/wc", "-c"]\n`));
    const reply = await zygo.exec("count", undefined, { stdin: "twelve bytes" });
    assert.equal(reply.stdout.trim(), "12");
    await assert.rejects(zygo.exec("count", 1, { stdin: "x" }), TypeError);
  });

  test("a Python handler's exception is a HandlerError with its traceback", async () => {
    await assert.rejects(zygo.exec("boom", {}), (error) => {
      assert.ok(error instanceof HandlerError);
      assert.ok(error instanceof ExecError);
      assert.ok(error instanceof ZygoError);
      assert.equal(error.name, "HandlerError");
      assert.equal(error.code, "handler_error");
      assert.equal(error.httpStatus, 0);
      assert.equal(error.type, "ValueError");
      assert.equal(error.message, "no greeting today");
      assert.match(error.traceback, /Traceback[\s\S]*handler\.py", line \d+, in boom/);
      assert.equal(error.reply.ok, false);
      assert.equal(error.reply.outcome.status, "handler_error");
      return true;
    });
  });

  test("a JavaScript handler's exception is a HandlerError with its stack", async () => {
    await assert.rejects(zygo.exec("fail"), (error) => {
      assert.ok(error instanceof HandlerError);
      assert.equal(error.type, "TypeError");
      assert.equal(error.message, "no greeting today");
      assert.match(error.traceback, /handler\.js/);
      return true;
    });
  });

  test("raiseOnError: false returns the failed reply", async () => {
    const reply = await zygo.exec("boom", {}, { raiseOnError: false });
    assert.equal(reply.ok, false);
    assert.equal(reply.result, null);
    assert.equal(reply.error.type, "ValueError");
    assert.equal(reply.outcome.status, "handler_error");
  });

  test("past the deadline: TimeoutError, with what it printed", async () => {
    await assert.rejects(zygo.exec("slow", 30), (error) => {
      assert.ok(error instanceof TimeoutError, String(error));
      assert.equal(error.code, "timeout");
      assert.equal(error.reply.outcome.timedOut, true);
      assert.equal(error.reply.stdout, "started\n");
      return true;
    });
  });

  test("over the memory limit: OutOfMemoryError", async () => {
    await assert.rejects(zygo.exec("hog"), (error) => {
      assert.ok(error instanceof OutOfMemoryError, String(error));
      assert.equal(error.code, "oom");
      assert.equal(error.reply.outcome.oomKilled, true);
      return true;
    });
  });

  test("an unknown function, pool script or name to remove: NotFoundError", async () => {
    for (const call of [
      () => zygo.exec("nosuch", {}),
      () => zygo.down("nosuch"),
      () => zygo.exec("pypool", 1, { script: `sha256:${"0".repeat(64)}` }),
    ]) {
      await assert.rejects(call(), (error) => {
        assert.ok(error instanceof NotFoundError, String(error));
        assert.equal(error.httpStatus, 404);
        assert.equal(error.code, "not_found");
        return true;
      });
    }
  });

  test("a bad spec: InvalidArgumentError with the supervisor's words", async () => {
    await assert.rejects(zygo.up(`name = "bad"\nentry = "handler.py:echo"\nspraes = 2\n`, { origin: "bad.toml" }), (error) => {
      assert.ok(error instanceof InvalidArgumentError, String(error));
      assert.equal(error.httpStatus, 400);
      assert.equal(error.code, "invalid_argument");
      assert.match(error.message, /^bad\.toml:3: spraes: unknown key/);
      return true;
    });
  });

  test("an event of 8 MiB arrives whole (sent after 100 Continue)", async () => {
    const event = "x".repeat(8 * 1024 * 1024);
    assert.equal((await zygo.exec("size", event)).result, event.length);
  });

  test("an event over 16 MiB: InvalidArgumentError (413)", async () => {
    const event = "x".repeat(16 * 1024 * 1024);
    await assert.rejects(zygo.exec("echo", event), (error) => {
      assert.ok(error instanceof InvalidArgumentError, String(error));
      assert.equal(error.httpStatus, 413);
      assert.match(error.message, /the limit is 16777216 bytes/);
      return true;
    });
  });

  test("a call's timeoutMs and AbortSignal", async () => {
    await assert.rejects(zygo.exec("slow", 1, { timeoutMs: 200 }), (error) => {
      assert.ok(error instanceof ZygoError);
      assert.equal(error.code, "deadline_exceeded");
      return true;
    });
    const controller = new AbortController();
    const call = zygo.exec("slow", 1, { signal: controller.signal });
    setTimeout(() => controller.abort(), 100);
    await assert.rejects(call, { name: "AbortError" });
    assert.equal((await zygo.exec("echo", "still serving")).result, "still serving");
  });
});

describe("a full queue", { skip }, () => {
  let supervisor;
  let zygo;

  before(async () => {
    supervisor = await Supervisor.start(["--workers", "1", "--max-queued", "1"]);
    supervisor.write("handler.py", PYTHON);
    zygo = new Client({ socketPath: supervisor.socket });
    await zygo.upFile(supervisor.spec("slow", `entry = "handler.py:slow"\n`));
  });

  after(async () => {
    zygo?.close();
    await supervisor?.stop();
  });

  test("429: TooManyRequestsError with retryAfter from Retry-After", async () => {
    const results = await withFullQueue(zygo, (call) =>
      assert.rejects(call, (error) => {
        assert.ok(error instanceof TooManyRequestsError, String(error));
        assert.equal(error.httpStatus, 429);
        assert.equal(error.code, "resource_exhausted");
        assert.equal(error.retryAfter, 1);
        return true;
      }),
    );
    assert.deepEqual(results, ["woke", "woke"]);
  });
});

test("no supervisor: UnavailableError", async () => {
  const dir = mkdtempSync("/tmp/zygo-ts-sdk-");
  try {
    const zygo = new Client({ socketPath: `${dir}/none.sock` });
    await assert.rejects(zygo.health(), (error) => {
      assert.ok(error instanceof UnavailableError);
      assert.equal(error.code, "unavailable");
      assert.equal(error.httpStatus, 0);
      assert.match(error.message, /is `zygo serve` running\?/);
      return true;
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a 503 is UnavailableError; an HTTP-date Retry-After is seconds from now", async () => {
  // A fake server, for what the real one answers only under conditions a test cannot
  // arrange cheaply (a zygote that died, an HTTP-date Retry-After).
  const dir = mkdtempSync("/tmp/zygo-ts-sdk-");
  const replies = [
    [503, {}, { error: { code: "unavailable", message: "the zygote died" } }],
    [429, { "Retry-After": new Date(Date.now() + 5_000).toUTCString() }, { error: { code: "resource_exhausted", message: "busy" } }],
    [500, {}, "not json"],
  ];
  const server = http.createServer((request, response) => {
    const [status, headers, body] = replies.shift();
    response.writeHead(status, { "Content-Type": "application/json", ...headers });
    response.end(typeof body === "string" ? body : JSON.stringify(body));
  });
  await new Promise((resolve) => server.listen(`${dir}/fake.sock`, resolve));
  try {
    const zygo = new Client({ socketPath: `${dir}/fake.sock` });
    await assert.rejects(zygo.exec("f"), UnavailableError);
    await assert.rejects(zygo.exec("f"), (error) => {
      assert.ok(error instanceof TooManyRequestsError);
      assert.ok(error.retryAfter >= 3 && error.retryAfter <= 5, String(error.retryAfter));
      return true;
    });
    await assert.rejects(zygo.exec("f"), (error) => {
      assert.equal(error.constructor, ApiError);
      assert.equal(error.httpStatus, 500);
      assert.match(error.message, /HTTP 500: not json/);
      return true;
    });
    zygo.close();
  } finally {
    server.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("pool.run stores a script again when the supervisor lost it", async () => {
  // A fake server: the real one loses a script only with its state dir.
  const dir = mkdtempSync("/tmp/zygo-ts-sdk-");
  const seen = [];
  let stored = false;
  const server = http.createServer((request, response) => {
    seen.push(`${request.method} ${request.url}`);
    request.resume();
    request.on("end", () => {
      response.setHeader("Content-Type", "application/json");
      if (request.method === "PUT") {
        stored = true;
        response.end(JSON.stringify({ digest: scriptDigest("src") }));
      } else if (!stored) {
        response.statusCode = 404;
        response.end(JSON.stringify({ error: { code: "not_found", message: "no script sha256:... (PutScript it first)" } }));
      } else {
        response.end(JSON.stringify({ ok: true, result: 1, outcome: { status: "ok" }, timings_us: {} }));
      }
    });
  });
  await new Promise((resolve) => server.listen(`${dir}/fake.sock`, resolve));
  try {
    const zygo = new Client({ socketPath: `${dir}/fake.sock` });
    const exec = `POST /v1/functions/p/exec?script=${encodeURIComponent(scriptDigest("src"))}`;
    assert.equal((await zygo.pool.run("p", "src")).result, 1);
    stored = false; // the supervisor lost it
    assert.equal((await zygo.pool.run("p", "src")).result, 1);
    assert.deepEqual(seen, ["PUT /v1/scripts", exec, exec, "PUT /v1/scripts", exec]);
    zygo.close();
  } finally {
    server.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the socket is found as zygo finds it", () => {
  assert.equal(defaultSocketPathFor(0, "/run/user/0"), "/run/zygo/zygo.sock");
  assert.equal(defaultSocketPathFor(1000, "/run/user/1000"), "/run/user/1000/zygo/zygo.sock");
  assert.equal(defaultSocketPathFor(1000, ""), "/tmp/zygo-1000/zygo.sock");
  assert.equal(defaultSocketPathFor(1000, undefined), "/tmp/zygo-1000/zygo.sock");
  assert.equal(resolveSocketPath("/given.sock"), "/given.sock");
  const saved = process.env.ZYGO_SOCKET;
  try {
    process.env.ZYGO_SOCKET = "/from/env.sock";
    assert.equal(resolveSocketPath(), "/from/env.sock");
    assert.equal(new Client().socketPath, "/from/env.sock");
    process.env.ZYGO_SOCKET = "";
    assert.equal(resolveSocketPath(), defaultSocketPathFor(process.geteuid(), process.env.XDG_RUNTIME_DIR));
  } finally {
    if (saved === undefined) delete process.env.ZYGO_SOCKET;
    else process.env.ZYGO_SOCKET = saved;
  }
});
