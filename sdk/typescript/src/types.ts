// The API's replies as the SDK returns them: the JSON of docs/supervisor.md ("The API")
// with camelCase names. A handler's `result` is passed through untouched.

/** `outcome.status`: how a request ended. */
export type OutcomeStatus =
  | "ok"
  | "handler_error"
  | "nonzero_exit"
  | "signaled"
  | "timeout"
  | "oom"
  | "pids_limit"
  | "seccomp_killed"
  | (string & {});

/** How the request's process ended, as `zygo run --outcome` says it. */
export interface Outcome {
  status: OutcomeStatus;
  exitCode: number;
  signal: number;
  timedOut: boolean;
  oomKilled: boolean;
  peakRssKb: number;
  wallMs: number;
  /** False when the supervisor runs without cgroup limits (`--allow-unlimited`). */
  limitsApplied?: boolean;
  /** For `seccomp_killed`: the call and its ABI, e.g. `{syscall: "getpid", arch: "i386"}`. */
  seccompKill?: { syscall: string; arch: string };
}

/** Where the request's time went, in microseconds. */
export interface Timings {
  fork: number;
  admit: number;
  run: number;
  reply: number;
  total: number;
}

/** A failed request's error: the handler's exception (its class), or `timeout`, `oom`,
 * `crashed`, `seccomp`, `nonzero_exit`. */
export interface ExecErrorInfo {
  type: string;
  message: string;
  traceback: string;
}

/** One request's reply. `ok` is true when the handler returned (an exec function: exit 0). */
export interface ExecReply<T = unknown> {
  ok: boolean;
  /** The handler's return value (null when it did not return). */
  result: T | null;
  error: ExecErrorInfo | null;
  /** Captured output, at most 1 MiB each. */
  stdout: string;
  stderr: string;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  outcome: Outcome;
  /** Microseconds: `fork`, `admit`, `run`, `reply`, `total`. */
  timingsUs: Timings;
}

/** A registered function or runtime pool, as `zygo ls --json` lists it. */
export interface FunctionInfo {
  name: string;
  image: string;
  runtime: "python" | "node" | "exec" | (string & {});
  entry: string;
  pool: boolean;
  /** `cold`, `warming`, `warm`, `failed`, ... */
  state: string;
  requests: number;
  memoryBytes: number;
  timeoutMs: number;
  coldAfterMs: number;
  specPath: string;
  /** HTTP only: warm-up progress, its last error, and how warm-ups went. */
  progress?: string;
  error?: string;
  warmUps?: number;
  warmMs?: number;
  forked?: boolean;
}
