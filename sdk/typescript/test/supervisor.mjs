// Starts a real supervisor (`zygo serve`) for a test file, with a code directory to write
// handlers and specs into. The binary is $ZYGO_BIN (the Bazel test sets it from its
// runfiles), else the workspace's bazel-bin/cli/zygo.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import * as path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import * as http from "node:http";

const here = path.dirname(fileURLToPath(import.meta.url));

export function zygoBinary() {
  return process.env.ZYGO_BIN || path.resolve(here, "../../../bazel-bin/cli/zygo");
}

/** Why a real supervisor cannot run here, or undefined when it can. */
export function skipReason() {
  if (process.geteuid() !== 0) return "needs root (the supervisor makes cgroups for its functions)";
  if (!existsSync(zygoBinary())) return `no zygo at ${zygoBinary()}: bazel build //cli:zygo`;
  return undefined;
}

/** On a supervisor started with `--workers 1 --max-queued 1` and a function "slow" that
 * sleeps its event's seconds: one call runs, one waits in the queue, and the call made then
 * is `refused()`, which must reject. Returns the results of the two others. */
export async function withFullQueue(zygo, refused) {
  const running = zygo.exec("slow", 1.5);
  await sleep(300);
  const waiting = zygo.exec("slow", 0);
  await sleep(100);
  await refused(zygo.exec("slow", 0));
  return [(await running).result, (await waiting).result];
}

export class Supervisor {
  /** Starts `zygo serve` in a fresh directory under /tmp (a socket path must stay short)
   * and waits until it answers. `args` are extra flags. */
  static async start(args = []) {
    const dir = mkdtempSync("/tmp/zygo-ts-sdk-");
    const supervisor = new Supervisor(dir);
    mkdirSync(supervisor.code);
    const serve = [zygoBinary(), "serve", "--listen", supervisor.socket, "--state-dir", `${dir}/state`, "--no-demo", ...args];
    // setpriv --pdeathsig: should this test's process die without its after() hooks, the
    // supervisor gets SIGTERM (and removes its cgroups) instead of living on.
    const command = existsSync("/usr/bin/setpriv") ? ["/usr/bin/setpriv", "--pdeathsig", "TERM", "--", ...serve] : serve;
    supervisor.process = spawn(command[0], command.slice(1), { stdio: ["ignore", "pipe", "pipe"] });
    const log = [];
    supervisor.process.stdout.on("data", (chunk) => log.push(chunk));
    supervisor.process.stderr.on("data", (chunk) => log.push(chunk));
    supervisor.log = () => Buffer.concat(log).toString();
    await supervisor.waitHealthy();
    return supervisor;
  }

  constructor(dir) {
    this.dir = dir;
    this.socket = `${dir}/zygo.sock`;
    this.code = `${dir}/code`;
  }

  async waitHealthy() {
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      if (this.process.exitCode !== null) {
        throw new Error(`zygo serve exited (${this.process.exitCode}):\n${this.log()}`);
      }
      if (await this.answers()) return;
      await sleep(50);
    }
    throw new Error(`zygo serve did not answer within 30 s:\n${this.log()}`);
  }

  answers() {
    return new Promise((resolve) => {
      const request = http.get({ socketPath: this.socket, path: "/v1/health" }, (response) => {
        response.resume();
        resolve(response.statusCode === 200);
      });
      request.on("error", () => resolve(false));
    });
  }

  /** Writes `text` to `name` in the code directory; returns its path. */
  write(name, text) {
    const file = path.join(this.code, name);
    writeFileSync(file, text);
    return file;
  }

  /** Writes NAME.toml (`code = "."`) with `body`; returns its path. */
  spec(name, body) {
    return this.write(`${name}.toml`, `name = "${name}"\n${body}`);
  }


  /** SIGTERM (the supervisor removes its cgroups), then the directory. */
  async stop() {
    if (this.process.exitCode === null) {
      const exited = new Promise((resolve) => this.process.once("exit", resolve));
      this.process.kill("SIGTERM");
      await Promise.race([exited, sleep(10_000)]);
      if (this.process.exitCode === null) this.process.kill("SIGKILL");
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
