// Typed errors. A request that could not run is an ApiError subclass chosen by the HTTP
// status; a request that ran and failed is an ExecError subclass chosen by its outcome.
import type { ExecReply } from "./types.js";

/** Every error the SDK throws. `code` is the API's error code (`not_found`,
 * `invalid_argument`, ...) or, for an ExecError, the outcome's status. */
export class ZygoError extends Error {
  readonly code: string;
  /** The HTTP status of the reply; 0 when there was none (the supervisor unreachable). */
  readonly httpStatus: number;

  constructor(code: string, message: string, httpStatus = 0) {
    super(message);
    this.name = new.target.name;
    this.code = code;
    this.httpStatus = httpStatus;
  }
}

/** The request could not run; the supervisor said why (or could not be reached). */
export class ApiError extends ZygoError {}

/** 404: no such function, pool or script. */
export class NotFoundError extends ApiError {}

/** 400 or 413: a spec, event, script or name the supervisor refused; the message is its own
 * (`app.toml:4: limits.memory: "12Q" is not a size ...`). */
export class InvalidArgumentError extends ApiError {}

/** 429: over capacity. `retryAfter` is the Retry-After header in seconds, when sent. */
export class TooManyRequestsError extends ApiError {
  readonly retryAfter: number | undefined;

  constructor(code: string, message: string, httpStatus: number, retryAfter?: number) {
    super(code, message, httpStatus);
    this.retryAfter = retryAfter;
  }
}

/** No supervisor answers on the socket, or it answered 503 (a zygote died: it is re-warmed
 * on the next call; or a connection cap was reached). */
export class UnavailableError extends ApiError {}

/** The request ran and did not succeed (`reply.ok` false): `reply` is the whole reply
 * (stdout, stderr, outcome, timings); `code` is `reply.outcome.status`; `type`, `message`
 * and `traceback` are its error's. Subclasses name the common cases; the others
 * (`nonzero_exit`, `signaled`, `pids_limit`, `seccomp_killed`) are ExecError itself. */
export class ExecError extends ZygoError {
  readonly reply: ExecReply;
  /** The exception's class (`ValueError`, `TypeError`), or `timeout`, `oom`, `crashed`, ... */
  readonly type: string;
  /** The handler's Python traceback or JavaScript stack ("" when it did not throw). */
  readonly traceback: string;

  constructor(reply: ExecReply) {
    // httpStatus 0 over HTTP and gRPC alike (as the Python SDK has it): the call itself
    // succeeded; the outcome says how the request went.
    super(reply.outcome.status, reply.error?.message || `the request ended with ${reply.outcome.status}`, 0);
    this.reply = reply;
    this.type = reply.error?.type ?? "";
    this.traceback = reply.error?.traceback ?? "";
  }
}

/** The handler threw: `type` is the exception's class, `message` its message, `traceback`
 * its Python traceback or JavaScript stack. */
export class HandlerError extends ExecError {}

/** The request ran past its function's `limits.timeout` and was killed. */
export class TimeoutError extends ExecError {}

/** The request ran out of its function's `limits.memory` and was killed. */
export class OutOfMemoryError extends ExecError {}

/** The error a failed reply becomes. */
export function execErrorFor(reply: ExecReply): ExecError {
  switch (reply.outcome.status) {
    case "handler_error":
      return new HandlerError(reply);
    case "timeout":
      return new TimeoutError(reply);
    case "oom":
      return new OutOfMemoryError(reply);
    default:
      return new ExecError(reply);
  }
}

/** The error an HTTP error reply becomes. */
export function apiErrorFor(
  httpStatus: number,
  code: string,
  message: string,
  retryAfter?: number,
): ApiError {
  switch (httpStatus) {
    case 404:
      return new NotFoundError(code, message, httpStatus);
    case 400:
    case 413:
      return new InvalidArgumentError(code, message, httpStatus);
    case 429:
      return new TooManyRequestsError(code, message, httpStatus, retryAfter);
    case 503:
      return new UnavailableError(code, message, httpStatus);
    default:
      return new ApiError(code, message, httpStatus);
  }
}
