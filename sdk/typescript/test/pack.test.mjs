// The package as a user gets it: `npm pack`, the tarball installed into a fresh directory,
// there a script (ES module and CommonJS) that calls exec on a real supervisor, and an
// application's TypeScript (test/consumer.ts) compiled by tsc against the installed types.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
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

  test("the installed package has no dependencies", () => {
    const listed = JSON.parse(execFileSync("npm", ["ls", "--all", "--json"], { cwd: fresh, encoding: "utf8" }));
    assert.deepEqual(Object.keys(listed.dependencies), ["@zygo/sdk"]);
    assert.equal(listed.dependencies["@zygo/sdk"].dependencies, undefined);
  });

  test("tsc compiles an application against the installed types", () => {
    copyFileSync(path.join(sdk, "test/consumer.ts"), path.join(fresh, "consumer.ts"));
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
      files: ["consumer.ts"],
    };
    writeFileSync(path.join(fresh, "tsconfig.json"), JSON.stringify(tsconfig));
    // Its package.json says neither module nor commonjs: Node16 checks it as CommonJS, so
    // the "require" types are checked; an ES module application is checked below.
    execFileSync(process.execPath, [path.join(sdk, "node_modules/typescript/bin/tsc"), "-p", fresh], { encoding: "utf8" });
    copyFileSync(path.join(sdk, "test/consumer.ts"), path.join(fresh, "consumer.mts"));
    tsconfig.files = ["consumer.mts"];
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
