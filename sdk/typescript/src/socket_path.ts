// Where the supervisor's socket is, by the rule `zygo` follows (sdk/cpp/zygo/socket_path.cc).
import { userInfo } from "node:os";

/** The default socket for a user: root's is system-wide, everyone else's per user. */
export function defaultSocketPathFor(euid: number, xdgRuntimeDir: string | undefined): string {
  if (euid === 0) return "/run/zygo/zygo.sock";
  if (xdgRuntimeDir) return `${xdgRuntimeDir}/zygo/zygo.sock`;
  // The uid in the name keeps users apart in the shared /tmp.
  return `/tmp/zygo-${euid}/zygo.sock`;
}

/** `explicit` if given, else $ZYGO_SOCKET, else the default socket of this process's user. */
export function resolveSocketPath(explicit?: string): string {
  if (explicit) return explicit;
  const fromEnv = process.env.ZYGO_SOCKET;
  if (fromEnv) return fromEnv;
  // process.geteuid is missing on Windows, where there is no supervisor either.
  const euid = process.geteuid ? process.geteuid() : userInfo().uid;
  return defaultSocketPathFor(euid, process.env.XDG_RUNTIME_DIR);
}
