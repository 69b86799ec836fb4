// What a transport (HTTP here, gRPC in grpc.ts) does for the Client.
import type { ExecReply, FunctionInfo } from "./types.js";

/** Per-call options. */
export interface CallOptions {
  /** Aborts the call (the supervisor sees the caller go away: 499). */
  signal?: AbortSignal;
  /** Gives up after this many milliseconds (a ZygoError with code `deadline_exceeded`);
   * overrides the client's `timeoutMs`. An exec is already bounded by its function's
   * `limits.timeout`. */
  timeoutMs?: number;
}

/** An exec's body: JSON event bytes, or an exec function's stdin; a pool's script digest. */
export interface ExecBody {
  eventJson?: Buffer;
  stdin?: Buffer;
  script?: string;
}

export interface Transport {
  /** The socket it talks to. */
  readonly socketPath?: string;
  health(options?: CallOptions): Promise<boolean>;
  up(spec: Buffer, origin: string, baseDir: string, options?: CallOptions): Promise<FunctionInfo>;
  down(name: string, options?: CallOptions): Promise<void>;
  list(options?: CallOptions): Promise<FunctionInfo[]>;
  putScript(source: Buffer, options?: CallOptions): Promise<string>;
  exec(name: string, body: ExecBody, options?: CallOptions): Promise<ExecReply>;
  close(): void;
}
