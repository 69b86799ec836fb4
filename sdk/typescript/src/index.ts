// @zygo/sdk: a client for Zygo's supervisor (`zygo serve`). See README.md.
export { Client, scriptDigest } from "./client.js";
export type { ClientOptions, ExecOptions, UpOptions } from "./client.js";
export {
  ApiError,
  ExecError,
  HandlerError,
  InvalidArgumentError,
  NotFoundError,
  OutOfMemoryError,
  TimeoutError,
  TooManyRequestsError,
  UnavailableError,
  ZygoError,
} from "./errors.js";
export { defaultSocketPathFor, resolveSocketPath } from "./socket_path.js";
export type { CallOptions, ExecBody, Transport } from "./transport.js";
export type { ExecErrorInfo, ExecReply, FunctionInfo, Outcome, OutcomeStatus, Timings } from "./types.js";
