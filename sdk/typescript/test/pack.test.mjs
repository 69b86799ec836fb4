// The package as a user gets it: `npm pack`, the tarball installed into a fresh directory,
// there a script (ES module and CommonJS; HTTP, and gRPC once its optional peers are
// installed) that calls exec on a real supervisor, and an
// application's TypeScript (test/consumer.ts) compiled by tsc against the installed types.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";

import { Supervisor, skipReason } from "./supervisor.mjs";

const sdk = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const npm = (args, cwd) => execFileSync("npm", [...args, "--no-audit", "--no-fund"], { cwd, encoding: "utf8" });

describe("npm pack, then install into a fresh directory", () => {
  let fresh;
  let tarball;

  before(() => {
    fresh = mkdtempSync("/tmp/zygo-ts-sdk-fresh-");
    // prepack builds dist/ first, as a publish would.
    const packed = JSON.parse(npm(["pack", "--json", "--pack-destination", fresh], sdk));
    tarball = path.join(fresh, packed[0].filename);
    writeFileSync(path.join(fresh, "package.json"), '{ "name": "fresh-app", "private": true }\n');
    npm(["install", tarball], fresh);
  });

  after(() => rmSync(fresh, { recursive: true, force: true }));

  test("the tarball holds the build, the README and no sources or tests", () => {
    const files = JSON.parse(npm(["pack", "--json", "--dry-run", "--ignore-scripts"], sdk))[0].files.map((f) => f.path);
    assert.ok(files.includes("dist/esm/index.js") && files.includes("dist/esm/index.d.ts"), files.join(" "));
    assert.ok(files.includes("dist/cjs/index.js") && files.includes("dist/cjs/package.json"), files.join(" "));
    assert.ok(files.includes("README.md"));
    assert.ok(!files.some((f) => f.startsWith("src/") || f.startsWith("test/") || f.includes("node_modules")), files.join(" "));
  });

  test("the installed package brings no dependencies (gRPC's are optional peers)", () => {
    assert.deepEqual(readdirSync(path.join(fresh, "node_modules")).filter((f) => !f.startsWith(".")), ["@zygo"]);
    assert.deepEqual(readdirSync(path.join(fresh, "node_modules/@zygo")), ["sdk"]);
  });

  test("tsc compiles an application against the installed types, as CommonJS and as an ES module", () => {
    // Node16 resolution reads the package's "exports": consumer.ts is CommonJS (the fresh
    // package.json says no "type"), so it gets the "require" types; consumer.mts the "import" ones.
    copyFileSync(path.join(sdk, "test/consumer.ts"), path.join(fresh, "consumer.ts"));
    copyFileSync(path.join(sdk, "test/consumer.ts"), path.join(fresh, "consumer.mts"));
    const tsconfig = {
      compilerOptions: {
        target: "ES2022",
        module: "Node16",
        moduleResolution: "Node16",
        strict: true,
        noEmit: true,
        types: ["node"],
        typeRoots: [path.join(sdk, "node_modules/@types")],
      },
      files: ["consumer.ts", "consumer.mts"],
    };
    writeFileSync(path.join(fresh, "tsconfig.json"), JSON.stringify(tsconfig));
    execFileSync(process.execPath, [path.join(sdk, "node_modules/typescript/bin/tsc"), "-p", fresh], { encoding: "utf8" });
  });

  describe("a script there calls exec", { skip: skipReason() }, () => {
    let supervisor;

    before(async () => {
      supervisor = await Supervisor.start();
      supervisor.write("hello.py", 'def hello(event):\n    return "hello, " + event["name"]\n');
      supervisor.spec("hello", 'entry = "hello.py:hello"\n');
    });

    after(async () => supervisor?.stop());

    const run = (file, text) => {
      writeFileSync(path.join(fresh, file), text);
      return execFileSync(process.execPath, [file], {
        cwd: fresh,
        encoding: "utf8",
        env: { ...process.env, ZYGO_SOCKET: supervisor.socket },
      });
    };

    test("as an ES module", () => {
      const out = run(
        "app.mjs",
        `import { Client, NotFoundError } from "@zygo/sdk";
const zygo = new Client();
await zygo.upFile(${JSON.stringify(`${supervisor.code}/hello.toml`)});
const reply = await zygo.exec("hello", { name: "Ada" });
console.log(reply.result);
try { await zygo.exec("nosuch"); } catch (error) { console.log(error instanceof NotFoundError); }
`,
      );
      assert.equal(out, "hello, Ada\ntrue\n");
    });

    test("over gRPC: an error naming the packages until they are installed, then exec", () => {
      const app = `import { Client } from "@zygo/sdk";
import { grpcTransport } from "@zygo/sdk/grpc";
try {
  const zygo = new Client({ transport: await grpcTransport({ socketPath: ${JSON.stringify(`${supervisor.dir}/zygo-grpc.sock`)} }) });
  console.log((await zygo.exec("hello", { name: "gRPC" })).result);
  zygo.close();
} catch (error) {
  console.log(error.code, error.message.includes("npm install @grpc/grpc-js @grpc/proto-loader"));
}
`;
      assert.equal(run("grpc.mjs", app), "unimplemented true\n");
      npm(["install", "--prefer-offline", "@grpc/grpc-js@^1.14.0", "@grpc/proto-loader@^0.8.0"], fresh);
      assert.equal(run("grpc.mjs", app), "hello, gRPC\n");
    });

    test("as CommonJS", () => {
      const out = run(
        "app.cjs",
        `const { Client, NotFoundError } = require("@zygo/sdk");
new Client().exec("hello", { name: "Grace" }).then((reply) => console.log(reply.result));
`,
      );
      assert.equal(out, "hello, Grace\n");
    });
  });
});
