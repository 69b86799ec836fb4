// The Client over the gRPC transport (@zygo/sdk/grpc) against a real supervisor's gRPC
// socket: the calls, and the errors as gRPC's status codes carry them.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import {
  Client,
  HandlerError,
  InvalidArgumentError,
  NotFoundError,
  OutOfMemoryError,
  TimeoutError,
  TooManyRequestsError,
  UnavailableError,
  ZygoError,
} from "../dist/esm/index.js";
import { defaultGrpcSocketPath, grpcTransport } from "../dist/esm/grpc.js";
import { Supervisor, skipReason, withFullQueue } from "./supervisor.mjs";

const HANDLERS = `import time

def hello(event):
    print("hi")
    return {"greeting": "hello, " + event["name"]}

def boom(event):
    raise ValueError("no greeting today")

def slow(event):
    time.sleep(event)

def hog(event):
    return len(bytearray(512 * 1024 * 1024))
`;

describe("over gRPC", { skip: skipReason() }, () => {
  let supervisor;
  let zygo;

  before(async () => {
    supervisor = await Supervisor.start();
    supervisor.write("handler.py", HANDLERS);
    supervisor.write("handler.js", "exports.greet = (event) => ({ greeting: 'hello, ' + event.name });\n");
    zygo = new Client({ transport: await grpcTransport({ socketPath: `${supervisor.dir}/zygo-grpc.sock` }) });
  });

  after(async () => {
    zygo?.close();
    await supervisor?.stop();
  });

  test("up, functions, exec (Python and Node), down", async () => {
    assert.equal(await zygo.health(), true);
    const limits = `[limits]\ntimeout = "2s"\nmemory = "64M"\n`;
    for (const name of ["hello", "boom", "slow", "hog"]) {
      const info = await zygo.upFile(supervisor.spec(name, `entry = "handler.py:${name}"\n${limits}`));
      assert.equal(info.name, name);
    }
    await zygo.upFile(supervisor.spec("greet", `runtime = "node"\nentry = "handler.js:greet"\n`));
    const listed = await zygo.functions();
    assert.deepEqual(listed.map((f) => f.name).sort(), ["boom", "greet", "hello", "hog", "slow"]);
    assert.equal(listed.find((f) => f.name === "hello").memoryBytes, 64 << 20);

    const reply = await zygo.exec("hello", { name: "Ada" });
    assert.deepEqual(reply.result, { greeting: "hello, Ada" });
    assert.equal(reply.error, null);
    assert.equal(reply.stdout, "hi\n");
    assert.equal(reply.outcome.status, "ok");
    assert.ok(reply.timingsUs.total > 0);
    assert.deepEqual((await zygo.exec("greet", { name: "Grace" })).result, { greeting: "hello, Grace" });
  });

  test("a Node pool's script", async () => {
    await zygo.upFile(supervisor.spec("jspool", `runtime = "node"\npool = true\n`));
    assert.equal((await zygo.pool.run("jspool", "function handler(e) { return e + 1; }\n", 41)).result, 42);
  });

  test("errors", async () => {
    await assert.rejects(zygo.exec("boom", {}), (error) => {
      assert.ok(error instanceof HandlerError);
      assert.equal(error.type, "ValueError");
      assert.match(error.traceback, /in boom/);
      return true;
    });
    await assert.rejects(zygo.exec("slow", 30), TimeoutError);
    await assert.rejects(zygo.exec("hog"), OutOfMemoryError);
    await assert.rejects(zygo.exec("nosuch"), NotFoundError);
    await assert.rejects(zygo.down("nosuch"), NotFoundError);
    await assert.rejects(zygo.up(`name = "bad"\nspraes = 2\n`, { origin: "bad.toml" }), (error) => {
      assert.ok(error instanceof InvalidArgumentError);
      assert.match(error.message, /^bad\.toml:2: spraes: unknown key/);
      return true;
    });
    await assert.rejects(zygo.exec("hello", "x".repeat(16 * 1024 * 1024)), (error) => {
      assert.ok(error instanceof InvalidArgumentError, String(error));
      assert.match(error.message, /the limit is 16777216 bytes/);
      return true;
    });
    await assert.rejects(zygo.exec("slow", 1, { timeoutMs: 200 }), { code: "deadline_exceeded" });
    const reply = await zygo.exec("boom", {}, { raiseOnError: false });
    assert.equal(reply.ok, false);
    assert.equal(reply.error.type, "ValueError");
    await zygo.down("boom");
  });
});

describe("a full queue over gRPC", { skip: skipReason() }, () => {
  let supervisor;
  let zygo;

  before(async () => {
    supervisor = await Supervisor.start(["--workers", "1", "--max-queued", "1"]);
    supervisor.write("handler.py", HANDLERS);
    zygo = new Client({ transport: await grpcTransport({ socketPath: `${supervisor.dir}/zygo-grpc.sock` }) });
    await zygo.upFile(supervisor.spec("slow", `entry = "handler.py:slow"\n`));
  });

  after(async () => {
    zygo?.close();
    await supervisor?.stop();
  });

  test("RESOURCE_EXHAUSTED: TooManyRequestsError with retryAfter from the trailer", async () => {
    await withFullQueue(zygo, (call) =>
      assert.rejects(call, (error) => {
        assert.ok(error instanceof TooManyRequestsError, String(error));
        assert.equal(error.retryAfter, 1);
        return true;
      }),
    );
  });
});

test("gRPC with no supervisor: UnavailableError", async () => {
  const zygo = new Client({ transport: await grpcTransport({ socketPath: "/tmp/zygo-ts-sdk-none/zygo-grpc.sock", timeoutMs: 5000 }) });
  await assert.rejects(zygo.health(), (error) => {
    assert.ok(error instanceof UnavailableError, String(error));
    assert.match(error.message, /is `zygo serve` running/);
    return true;
  });
  zygo.close();
});

test("the default gRPC socket is beside the HTTP one", () => {
  const saved = process.env.ZYGO_SOCKET;
  try {
    process.env.ZYGO_SOCKET = "/run/x/zygo.sock";
    assert.equal(defaultGrpcSocketPath(), "/run/x/zygo-grpc.sock");
  } finally {
    if (saved === undefined) delete process.env.ZYGO_SOCKET;
    else process.env.ZYGO_SOCKET = saved;
  }
});
