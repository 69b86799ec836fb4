// The gRPC transport (`@zygo/sdk/grpc`): the same Client over the supervisor's gRPC socket,
// through @grpc/grpc-js and @grpc/proto-loader, optional peer dependencies loaded only here.
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, renameSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";

import { ZYGO_PROTO } from "./generated/zygo_proto.js";
import {
  ApiError,
  InvalidArgumentError,
  NotFoundError,
  TooManyRequestsError,
  UnavailableError,
  ZygoError,
} from "./errors.js";
import { execReply, functionInfo, isObject } from "./replies.js";
import { resolveSocketPath } from "./socket_path.js";
import type { CallOptions, ExecBody, Transport } from "./transport.js";
import type { ExecReply, FunctionInfo } from "./types.js";

export interface GrpcTransportOptions {
  /** The gRPC socket; default zygo-grpc.sock beside the HTTP socket the Client would use
   * (where `zygo serve` puts it unless given --grpc-listen). */
  socketPath?: string;
  /** Gives up on any call after this many milliseconds (default: never). */
  timeoutMs?: number;
}

/** zygo-grpc.sock beside the HTTP socket ($ZYGO_SOCKET or the default). */
export function defaultGrpcSocketPath(): string {
  return path.join(path.dirname(resolveSocketPath()), "zygo-grpc.sock");
}

/** A gRPC transport for `new Client({transport})`. Throws when @grpc/grpc-js or
 * @grpc/proto-loader is not installed. */
export async function grpcTransport(options: GrpcTransportOptions = {}): Promise<Transport> {
  let grpc: GrpcModule;
  let loader: ProtoLoaderModule;
  try {
    // An ES module's import of these CommonJS packages has them whole as its default.
    const grpcModule = (await import("@grpc/grpc-js")) as unknown as { default?: unknown };
    const loaderModule = (await import("@grpc/proto-loader")) as unknown as { default?: unknown };
    grpc = (grpcModule.default ?? grpcModule) as GrpcModule;
    loader = (loaderModule.default ?? loaderModule) as ProtoLoaderModule;
  } catch (error) {
    throw new ZygoError(
      "unimplemented",
      `the gRPC transport needs @grpc/grpc-js and @grpc/proto-loader: npm install @grpc/grpc-js @grpc/proto-loader (${(error as Error).message})`,
    );
  }
  const definition = loader.loadSync(protoFile(), {
    keepCase: true,
    longs: Number,
    enums: String,
    defaults: true,
  });
  const service = grpc.loadPackageDefinition(definition).zygo.v1.Zygo;
  const socketPath = options.socketPath ?? defaultGrpcSocketPath();
  const stub = new service(`unix:${socketPath}`, grpc.credentials.createInsecure(), {
    // Replies carry up to 1 MiB of stdout and of stderr beside the result; events go up to
    // 16 MiB (the supervisor's limit), past grpc-js's 4 MiB default.
    "grpc.max_receive_message_length": 64 << 20,
    "grpc.max_send_message_length": 64 << 20,
  });
  return new GrpcTransport(grpc, stub, socketPath, options.timeoutMs);
}

// proto-loader reads files only: the proto (built into this module from sdk/proto) goes to
// a file named by its digest in the temporary directory, written once.
function protoFile(): string {
  const digest = createHash("sha256").update(ZYGO_PROTO).digest("hex").slice(0, 16);
  const dir = path.join(tmpdir(), `zygo-sdk-proto-${digest}`);
  const file = path.join(dir, "zygo", "v1", "zygo.proto");
  if (!existsSync(file)) {
    mkdirSync(path.dirname(file), { recursive: true });
    const partial = `${file}.${process.pid}`;
    writeFileSync(partial, ZYGO_PROTO);
    renameSync(partial, file);
  }
  return file;
}

class GrpcTransport implements Transport {
  constructor(
    private readonly grpc: GrpcModule,
    private readonly stub: ZygoStub,
    readonly socketPath: string,
    private readonly timeoutMs: number | undefined,
  ) {}

  async health(options?: CallOptions): Promise<boolean> {
    return Boolean((await this.call("Health", {}, options)).ok);
  }

  async up(spec: Buffer, origin: string, baseDir: string, options?: CallOptions): Promise<FunctionInfo> {
    const request = { spec_toml: spec.toString("utf8"), origin, base_dir: baseDir };
    return functionInfo(await this.call("Up", request, options));
  }

  async down(name: string, options?: CallOptions): Promise<void> {
    await this.call("Down", { name }, options);
  }

  async list(options?: CallOptions): Promise<FunctionInfo[]> {
    const reply = await this.call("List", {}, options);
    return (Array.isArray(reply.functions) ? reply.functions.filter(isObject) : []).map(functionInfo);
  }

  async putScript(source: Buffer, options?: CallOptions): Promise<string> {
    return String((await this.call("PutScript", { source }, options)).digest);
  }

  async exec(name: string, body: ExecBody, options?: CallOptions): Promise<ExecReply> {
    const request = {
      function: name,
      script_digest: body.script ?? "",
      event_json: body.eventJson ?? Buffer.alloc(0),
      stdin_data: body.stdin ?? Buffer.alloc(0),
    };
    const reply = await this.call("Exec", request, options);
    // The message as HTTP's JSON has it: bytes made text, the seccomp fields nested.
    const text = (value: unknown) => (Buffer.isBuffer(value) ? value.toString("utf8") : "");
    const resultJson = text(reply.result_json);
    const outcome = isObject(reply.outcome) ? { ...reply.outcome } : {};
    if (outcome.seccomp_syscall) outcome.seccomp_kill = { syscall: outcome.seccomp_syscall, arch: outcome.seccomp_arch };
    return execReply({
      ...reply,
      result: resultJson ? JSON.parse(resultJson) : null,
      // proto3 has no null: an ok reply's error is an empty message.
      error: reply.ok ? null : reply.error,
      stdout: text(reply.stdout),
      stderr: text(reply.stderr),
      outcome,
    });
  }

  close(): void {
    this.stub.close();
  }

  private call(method: string, request: object, options?: CallOptions): Promise<Record<string, unknown>> {
    const timeoutMs = options?.timeoutMs ?? this.timeoutMs;
    const callOptions = timeoutMs === undefined ? {} : { deadline: new Date(Date.now() + timeoutMs) };
    const signal = options?.signal;
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(abortError(signal));
      const call = this.stub[method](request, callOptions, (error: GrpcError | null, reply: Record<string, unknown>) => {
        signal?.removeEventListener("abort", onAbort);
        if (error) reject(signal?.aborted ? abortError(signal) : this.errorFor(method, error));
        else resolve(reply);
      });
      const onAbort = () => call.cancel();
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  // gRPC status codes to the SDK's errors, as HTTP statuses map in errors.ts.
  private errorFor(method: string, error: GrpcError): Error {
    const status = this.grpc.status;
    const message = error.details || error.message;
    switch (error.code) {
      case status.NOT_FOUND:
        return new NotFoundError("not_found", message);
      case status.INVALID_ARGUMENT:
        return new InvalidArgumentError("invalid_argument", message);
      case status.RESOURCE_EXHAUSTED:
        // An event over the limit is RESOURCE_EXHAUSTED over gRPC, 413 over HTTP.
        if (/the limit is \d+ bytes|larger than max/.test(message)) {
          return new InvalidArgumentError("payload_too_large", message);
        }
        return new TooManyRequestsError("resource_exhausted", message, 0, retryAfterOf(error));
      case status.UNAVAILABLE:
        return new UnavailableError(
          "unavailable",
          /No connection established|ENOENT|ECONNREFUSED/.test(message)
            ? `cannot reach the supervisor's gRPC socket at ${this.socketPath}: is \`zygo serve\` running? (${message})`
            : message,
        );
      case status.DEADLINE_EXCEEDED:
        return new ZygoError("deadline_exceeded", `${method}: ${message}`);
      default:
        return new ApiError(statusName(status, error.code), message);
    }
  }
}

function statusName(status: Record<string, number>, code: number): string {
  const name = Object.keys(status).find((key) => status[key] === code);
  return name ? name.toLowerCase() : "unknown";
}

function abortError(signal: AbortSignal): Error {
  const error = new Error("The operation was aborted", { cause: signal.reason });
  error.name = "AbortError";
  return error;
}

// The few shapes of @grpc/grpc-js and @grpc/proto-loader used here, so that this module's
// types do not need theirs (they are optional).
interface GrpcError extends Error {
  code: number;
  details: string;
  metadata?: { get(key: string): unknown[] };
}

// A full queue's retry-after trailer (seconds), as HTTP's Retry-After header.
function retryAfterOf(error: GrpcError): number | undefined {
  const seconds = Number(error.metadata?.get("retry-after")?.[0]);
  return Number.isFinite(seconds) && seconds >= 0 ? seconds : undefined;
}

interface ZygoStub {
  [method: string]: any;
  close(): void;
}

interface GrpcModule {
  loadPackageDefinition(definition: unknown): { zygo: { v1: { Zygo: new (address: string, credentials: unknown, options: object) => ZygoStub } } };
  credentials: { createInsecure(): unknown };
  status: Record<string, number>;
}

interface ProtoLoaderModule {
  loadSync(file: string, options: object): unknown;
}
