// The Client: the surface every Zygo SDK shares (exec, up, down, functions, scripts.put,
// pool.run, health) over a transport, HTTP on the unix socket unless another is given.
import { createHash } from "node:crypto";
import { readFile, realpath } from "node:fs/promises";
import * as path from "node:path";

import { execErrorFor, NotFoundError } from "./errors.js";
import { HttpTransport } from "./http_transport.js";
import { resolveSocketPath } from "./socket_path.js";
import type { CallOptions, ExecBody, Transport } from "./transport.js";
import type { ExecReply, FunctionInfo } from "./types.js";

export interface ClientOptions {
  /** The HTTP/JSON socket; default $ZYGO_SOCKET, else the default socket as `zygo` finds it. */
  socketPath?: string;
  /** Gives up on any call after this many milliseconds (default: never). */
  timeoutMs?: number;
  /** Another transport (`await grpcTransport()` from `@zygo/sdk/grpc`); socketPath and
   * timeoutMs are then the transport's. */
  transport?: Transport;
}

export interface ExecOptions extends CallOptions {
  /** Throw an ExecError (HandlerError, TimeoutError, OutOfMemoryError, ...) when the
   * request ran and failed (default true); false returns the reply with `ok` false. */
  raiseOnError?: boolean;
  /** An exec function's standard input, instead of an event. */
  stdin?: string | Uint8Array;
  /** Run this stored script (its digest) in a runtime pool; see `pool.run`. */
  script?: string;
}

export interface UpOptions extends CallOptions {
  /** Names the spec in error messages (default "request"). */
  origin?: string;
  /** The directory the spec's relative paths (`code`) resolve against. */
  baseDir?: string;
}

export class Client {
  readonly socketPath: string;
  private readonly transport: Transport;
  // The digests of the scripts pool.run stored, so each is sent once per Client.
  private readonly stored = new Set<string>();

  /** Runtime-pool scripts. */
  readonly scripts = {
    /** Stores a script (content-addressed) and returns its digest, `sha256:<hex>`. */
    put: (source: string | Uint8Array, options?: CallOptions): Promise<string> =>
      this.transport.putScript(toBuffer(source), options),
  };

  /** Runtime pools (functions with `pool = true`). */
  readonly pool = {
    /** Runs `script` (its source, which defines `handler(event)`) in runtime pool `pool`
     * with `event`: stores it first unless this client already did (or the supervisor lost
     * it), then calls it by digest. Replies and errors as exec. */
    run: async <T = unknown>(
      pool: string,
      script: string | Uint8Array,
      event?: unknown,
      options?: Omit<ExecOptions, "script" | "stdin">,
    ): Promise<ExecReply<T>> => {
      const source = toBuffer(script);
      const digest = scriptDigest(source);
      if (!this.stored.has(digest)) {
        await this.transport.putScript(source, options);
        this.stored.add(digest);
      }
      try {
        return await this.exec<T>(pool, event, { ...options, script: digest });
      } catch (error) {
        // The store's words: "no script sha256:... (PutScript it first)".
        if (!(error instanceof NotFoundError && error.message.startsWith("no script "))) throw error;
      }
      await this.transport.putScript(source, options);
      return this.exec<T>(pool, event, { ...options, script: digest });
    },
  };

  constructor(options: ClientOptions = {}) {
    this.socketPath = options.transport?.socketPath ?? resolveSocketPath(options.socketPath);
    this.transport = options.transport ?? new HttpTransport(this.socketPath, options.timeoutMs);
  }

  /** True when the supervisor answers; throws UnavailableError when nothing does. */
  health(options?: CallOptions): Promise<boolean> {
    return this.transport.health(options);
  }

  /** Registers (or replaces) the function the TOML text describes and returns its info at
   * once; its warm-up goes on, and the first call waits for it. Throws InvalidArgumentError
   * for a spec the supervisor refuses. */
  up(specToml: string | Uint8Array, options: UpOptions = {}): Promise<FunctionInfo> {
    const { origin = "request", baseDir = "", ...call } = options;
    return this.transport.up(toBuffer(specToml), origin, baseDir, call);
  }

  /** up() of a spec file: named by its file name, its relative paths resolved against its
   * directory, as `zygo up FILE` does. */
  async upFile(file: string, options?: CallOptions): Promise<FunctionInfo> {
    const text = await readFile(file);
    const absolute = path.resolve(file);
    const baseDir = await realpath(path.dirname(absolute));
    return this.up(text, { ...options, origin: path.basename(absolute), baseDir });
  }

  /** Removes a function or runtime pool; NotFoundError when there is none by that name. */
  down(name: string, options?: CallOptions): Promise<void> {
    return this.transport.down(name, options);
  }

  /** The registered functions and runtime pools. */
  functions(options?: CallOptions): Promise<FunctionInfo[]> {
    return this.transport.list(options);
  }

  /** Runs one request of function `fn` with `event` (any JSON value; none is null) and
   * returns its reply. Throws an ApiError subclass when it could not run (NotFoundError,
   * InvalidArgumentError, TooManyRequestsError, UnavailableError) and, unless
   * `raiseOnError` is false, an ExecError subclass when it ran and failed. */
  async exec<T = unknown>(fn: string, event?: unknown, options: ExecOptions = {}): Promise<ExecReply<T>> {
    const { raiseOnError = true, stdin, script, ...call } = options;
    const body: ExecBody = { script };
    if (stdin !== undefined) {
      if (event !== undefined) throw new TypeError("exec: give an event or stdin, not both");
      body.stdin = toBuffer(stdin);
    } else if (event !== undefined) {
      body.eventJson = Buffer.from(JSON.stringify(event), "utf8");
    }
    const reply = (await this.transport.exec(fn, body, call)) as ExecReply<T>;
    if (!reply.ok && raiseOnError) throw execErrorFor(reply);
    return reply;
  }

  /** Closes kept-alive connections. Not needed before exit: idle ones never hold it up. */
  close(): void {
    this.transport.close();
  }
}

function toBuffer(data: string | Uint8Array): Buffer {
  return typeof data === "string" ? Buffer.from(data, "utf8") : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}

/** The name the supervisor stores a script under: `sha256:<hex of its bytes>`. */
export function scriptDigest(source: string | Uint8Array): string {
  return `sha256:${createHash("sha256").update(toBuffer(source)).digest("hex")}`;
}
