// The API's replies (HTTP's JSON, or gRPC's messages decoded with their proto field names)
// made into the SDK's camelCase types.
import type { ExecReply, FunctionInfo } from "./types.js";

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function num(value: unknown): number {
  return typeof value === "number" ? value : Number(value ?? 0);
}

export function functionInfo(json: Record<string, unknown>): FunctionInfo {
  const info: FunctionInfo = {
    name: String(json.name ?? ""),
    image: String(json.image ?? ""),
    runtime: String(json.runtime ?? ""),
    entry: String(json.entry ?? ""),
    pool: Boolean(json.pool),
    state: String(json.state ?? ""),
    requests: num(json.requests),
    memoryBytes: num(json.memory_bytes),
    timeoutMs: num(json.timeout_ms),
    coldAfterMs: num(json.cold_after_ms),
    specPath: String(json.spec_path ?? ""),
  };
  // HTTP only (gRPC's FunctionInfo has none of them).
  if (json.progress !== undefined) info.progress = String(json.progress);
  if (json.error !== undefined) info.error = String(json.error);
  if (json.warm_ups !== undefined) info.warmUps = num(json.warm_ups);
  if (json.warm_ms !== undefined) info.warmMs = num(json.warm_ms);
  if (json.forked !== undefined) info.forked = Boolean(json.forked);
  return info;
}

export function execReply(json: Record<string, unknown>): ExecReply {
  const outcome = isObject(json.outcome) ? json.outcome : {};
  const timings = isObject(json.timings_us) ? json.timings_us : {};
  const error = isObject(json.error) ? json.error : undefined;
  const reply: ExecReply = {
    ok: Boolean(json.ok),
    result: json.result ?? null,
    error: error
      ? { type: String(error.type ?? ""), message: String(error.message ?? ""), traceback: String(error.traceback ?? "") }
      : null,
    stdout: String(json.stdout ?? ""),
    stderr: String(json.stderr ?? ""),
    stdoutTruncated: Boolean(json.stdout_truncated),
    stderrTruncated: Boolean(json.stderr_truncated),
    outcome: {
      status: String(outcome.status ?? ""),
      exitCode: num(outcome.exit_code),
      signal: num(outcome.signal),
      timedOut: Boolean(outcome.timed_out),
      oomKilled: Boolean(outcome.oom_killed),
      peakRssKb: num(outcome.peak_rss_kb),
      wallMs: num(outcome.wall_ms),
    },
    timingsUs: {
      fork: num(timings.fork),
      admit: num(timings.admit),
      run: num(timings.run),
      reply: num(timings.reply),
      total: num(timings.total),
    },
  };
  if (outcome.limits_applied !== undefined) reply.outcome.limitsApplied = Boolean(outcome.limits_applied);
  if (isObject(outcome.seccomp_kill)) {
    reply.outcome.seccompKill = {
      syscall: String(outcome.seccomp_kill.syscall ?? ""),
      arch: String(outcome.seccomp_kill.arch ?? ""),
    };
  }
  return reply;
}
