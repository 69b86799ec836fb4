// The HTTP/JSON transport: node:http over the unix socket, no dependencies.
import * as http from "node:http";

import { apiErrorFor, UnavailableError, ZygoError } from "./errors.js";
import type { CallOptions, ExecBody, Transport } from "./transport.js";
import { execReply, functionInfo, isObject } from "./replies.js";
import type { ExecReply, FunctionInfo } from "./types.js";

interface Response {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

export class HttpTransport implements Transport {
  readonly socketPath: string;
  private readonly agent: http.Agent;
  private readonly timeoutMs: number | undefined;

  constructor(socketPath: string, timeoutMs?: number) {
    this.socketPath = socketPath;
    this.timeoutMs = timeoutMs;
    // Keep-alive: a call reuses the last one's connection (the supervisor closes one idle
    // for 75 s). Idle sockets are unref'd by the agent, so they never hold the process open.
    this.agent = new http.Agent({ keepAlive: true });
  }

  async health(options?: CallOptions): Promise<boolean> {
    return Boolean((await this.json("GET", "/v1/health", options)).ok);
  }

  async up(spec: Buffer, origin: string, baseDir: string, options?: CallOptions) {
    const query = new URLSearchParams({ origin, base_dir: baseDir });
    const reply = await this.json("POST", `/v1/functions?${query}`, options, spec, "application/toml");
    return functionInfo(reply);
  }

  async down(name: string, options?: CallOptions): Promise<void> {
    await this.json("DELETE", `/v1/functions/${encodeURIComponent(name)}`, options);
  }

  async list(options?: CallOptions): Promise<FunctionInfo[]> {
    const reply = await this.json("GET", "/v1/functions", options);
    const functions = Array.isArray(reply.functions) ? reply.functions.filter(isObject) : [];
    return functions.map(functionInfo);
  }

  async putScript(source: Buffer, options?: CallOptions): Promise<string> {
    const reply = await this.json("PUT", "/v1/scripts", options, source, "text/plain; charset=utf-8");
    return String(reply.digest);
  }

  async exec(name: string, body: ExecBody, options?: CallOptions): Promise<ExecReply> {
    let path = `/v1/functions/${encodeURIComponent(name)}/exec`;
    if (body.script !== undefined) path += `?${new URLSearchParams({ script: body.script })}`;
    let contentType: string | undefined;
    let data: Buffer = Buffer.alloc(0); // an empty body is the null event
    if (body.stdin !== undefined) {
      data = body.stdin;
      contentType = "application/octet-stream";
    } else if (body.eventJson !== undefined) {
      data = body.eventJson;
      contentType = "application/json";
    }
    return execReply(await this.json("POST", path, options, data, contentType));
  }

  close(): void {
    this.agent.destroy();
  }

  // One call: the reply's JSON object on 2xx, else the typed error.
  private async json(
    method: string,
    path: string,
    options: CallOptions | undefined,
    body?: Buffer,
    contentType?: string,
  ): Promise<Record<string, unknown>> {
    const response = await this.request(method, path, options, body, contentType);
    let parsed: unknown;
    try {
      parsed = response.body.length > 0 ? JSON.parse(response.body.toString("utf8")) : {};
    } catch {
      parsed = undefined;
    }
    const object = isObject(parsed) ? parsed : undefined;
    if (response.status >= 200 && response.status < 300) {
      if (object) return object;
      throw new ZygoError("internal", `${method} ${path}: the reply is not a JSON object`, response.status);
    }
    const error = object && isObject(object.error) ? object.error : undefined;
    const code = error && typeof error.code === "string" ? error.code : "unknown";
    const message =
      error && typeof error.message === "string"
        ? error.message
        : `${method} ${path}: HTTP ${response.status}: ${response.body.subarray(0, 200).toString()}`;
    throw apiErrorFor(response.status, code, message, retryAfterSeconds(response.headers["retry-after"]));
  }

  private async request(
    method: string,
    path: string,
    options: CallOptions | undefined,
    body?: Buffer,
    contentType?: string,
  ): Promise<Response> {
    try {
      return await this.requestOnce(method, path, options, body, contentType);
    } catch (error) {
      // A kept-alive connection the supervisor closed as we reused it: it never read the
      // request, so sending it again on a new connection is safe (Node's documented pattern).
      if ((error as RetryableError).reusedSocket) {
        return await this.requestOnce(method, path, options, body, contentType);
      }
      throw error;
    }
  }

  private requestOnce(
    method: string,
    path: string,
    options: CallOptions | undefined,
    body?: Buffer,
    contentType?: string,
  ): Promise<Response> {
    const headers: http.OutgoingHttpHeaders = { Accept: "application/json" };
    if (contentType) headers["Content-Type"] = contentType;
    if (body !== undefined || method === "POST" || method === "PUT") {
      headers["Content-Length"] = body?.length ?? 0;
    }
    // A large body waits for 100 Continue: a body the supervisor refuses at the headers
    // (413, over 16 MiB) then gets its answer instead of EPIPE halfway through the write.
    const expectContinue = body !== undefined && body.length > kExpectContinueBytes;
    if (expectContinue) headers.Expect = "100-continue";
    const timeoutMs = options?.timeoutMs ?? this.timeoutMs;
    return new Promise((resolve, reject) => {
      const request = http.request({
        socketPath: this.socketPath,
        path,
        method,
        headers,
        agent: this.agent,
        signal: options?.signal,
      });
      let timer: NodeJS.Timeout | undefined;
      if (timeoutMs !== undefined) {
        timer = setTimeout(() => {
          request.destroy(
            new ZygoError("deadline_exceeded", `${method} ${path}: no reply within ${timeoutMs} ms`),
          );
        }, timeoutMs);
      }
      const done = () => clearTimeout(timer);
      request.on("error", (error: NodeJS.ErrnoException) => {
        done();
        reject(this.transportError(method, path, error, request.reusedSocket));
      });
      request.on("response", (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("error", (error: NodeJS.ErrnoException) => {
          done();
          reject(this.transportError(method, path, error, false));
        });
        response.on("end", () => {
          done();
          resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks) });
          // Answered before the body went: the connection cannot carry another request.
          if (expectContinue && !request.writableEnded) request.destroy();
        });
      });
      if (expectContinue) {
        request.on("continue", () => request.end(body));
        request.flushHeaders();
      } else {
        request.end(body);
      }
    });
  }

  private transportError(
    method: string,
    path: string,
    error: NodeJS.ErrnoException,
    reusedSocket: boolean,
  ): Error {
    if (error instanceof ZygoError || error.name === "AbortError") return error;
    if (error.code === "ENOENT" || error.code === "ECONNREFUSED") {
      return new UnavailableError(
        "unavailable",
        `cannot reach the supervisor at ${this.socketPath}: is \`zygo serve\` running? (${error.code})`,
      );
    }
    const wrapped = new UnavailableError("unavailable", `${method} ${path} on ${this.socketPath}: ${error.message}`);
    if (reusedSocket && error.code === "ECONNRESET") (wrapped as RetryableError).reusedSocket = true;
    return wrapped;
  }
}

const kExpectContinueBytes = 1 << 20;

interface RetryableError extends Error {
  reusedSocket?: boolean;
}

/** Retry-After in seconds: its delta-seconds, or an HTTP date's distance from now. */
export function retryAfterSeconds(header: string | undefined): number | undefined {
  if (header === undefined) return undefined;
  const text = header.trim();
  if (/^\d+$/.test(text)) return Number(text);
  const date = Date.parse(text);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, Math.ceil((date - Date.now()) / 1000));
}
