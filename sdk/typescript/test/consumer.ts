// An application's TypeScript against the installed package: tsc must accept it (the test
// compiles it in a fresh directory where `npm install` put the packed tarball).
import {
  Client,
  ExecError,
  HandlerError,
  TooManyRequestsError,
  scriptDigest,
  type ExecReply,
  type FunctionInfo,
} from "@zygo/sdk";
import { grpcTransport, type GrpcTransportOptions } from "@zygo/sdk/grpc";

interface Greeting {
  greeting: string;
}

export async function main(socketPath: string): Promise<string> {
  const zygo = new Client({ socketPath, timeoutMs: 60_000 });
  const info: FunctionInfo = await zygo.upFile("hello.toml");
  const reply: ExecReply<Greeting> = await zygo.exec<Greeting>(info.name, { name: "Ada" });
  const greeting: string | undefined = reply.result?.greeting;
  const total: number = reply.timingsUs.total;
  const names: string[] = (await zygo.functions()).map((f) => f.name);
  const source = "def handler(event):\n    return event\n";
  const digest: string = await zygo.scripts.put(source);
  if (digest !== scriptDigest(source)) throw new Error("digests differ");
  try {
    await zygo.exec("pool", null, { script: digest, raiseOnError: false });
    await zygo.pool.run("pool", source, { n: 1 }, { raiseOnError: true, timeoutMs: 1000 });
  } catch (error) {
    if (error instanceof TooManyRequestsError) {
      const wait: number | undefined = error.retryAfter;
      return String(wait);
    }
    if (error instanceof HandlerError) return `${error.type}: ${error.message}\n${error.traceback}`;
    if (error instanceof ExecError) return error.reply.outcome.status;
    throw error;
  }
  const healthy: boolean = await zygo.health();
  await zygo.down(info.name);
  return `${greeting} ${total} ${names.join(",")} ${healthy}`;
}

export async function overGrpc(options: GrpcTransportOptions): Promise<boolean> {
  const zygo = new Client({ transport: await grpcTransport(options) });
  const ok = await zygo.health();
  zygo.close();
  return ok;
}
