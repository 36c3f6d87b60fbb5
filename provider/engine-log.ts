/**
 * A warning through the Pulumi engine's Log RPC, the way Pulumi's own providers warn, from inside
 * Pulumi's dynamic-provider host. The host is started with the engine's address as its one argument
 * but never connects to it, so `pulumi.log.warn` there falls back to the host's stderr; the CLI shows
 * that output as info (severity "info#err" in `pulumi up --json`), attached to the stack, and on
 * Windows only with --debug (pulumi/pulumi sdk/go/common/resource/plugin/plugin.go,
 * isDynamicPluginBinary). Sent through the Log RPC it shows as a warning.
 */
import { createRequire } from "node:module";
import type * as Grpc from "@grpc/grpc-js";
import type * as EngineGrpc from "@pulumi/pulumi/proto/engine_grpc_pb";
import type * as EnginePb from "@pulumi/pulumi/proto/engine_pb";

/** Pulumi's dynamic-provider host script, as Node runs it (`require.main`). */
const HOST_SCRIPT = /[\\/]@pulumi[\\/]pulumi[\\/]cmd[\\/]dynamic-provider[\\/]index\.js$/;
/** `host:port` as the CLI passes it (`127.0.0.1:<port>`); port 0 means no engine to call. */
const ENGINE_ADDRESS = /^[\w.[\]:-]+:[1-9]\d{0,4}$/;
/** A Log call the engine does not answer in this time is given up (the warning goes to stderr). */
const LOG_DEADLINE_MS = 10_000;

export interface EngineLog {
  /** Resolves true once the engine took the warning, false when it could not be delivered. */
  warn(message: string): Promise<boolean>;
}

/**
 * The engine's Log RPC when this code runs in Pulumi's dynamic-provider host with an engine address;
 * otherwise undefined. The gRPC stubs are loaded beside the host script, so they are the host's own.
 */
export function hostEngineLog(
  main: { filename: string } | undefined = require.main,
  argv: readonly string[] = process.argv,
): EngineLog | undefined {
  const script = main?.filename;
  // argv: node, the host script, the engine address (node's own flags are not in argv).
  const address = argv[2];
  if (script === undefined || !HOST_SCRIPT.test(script) || address === undefined) return undefined;
  if (!ENGINE_ADDRESS.test(address)) return undefined;
  let loaded: { grpc: typeof Grpc; pb: typeof EnginePb; client: EngineGrpc.EngineClient } | undefined;
  const load = () => {
    if (loaded) return loaded;
    const fromHost = createRequire(script);
    const grpc = fromHost("@grpc/grpc-js") as typeof Grpc;
    const stubs = fromHost("../../proto/engine_grpc_pb") as typeof EngineGrpc;
    const pb = fromHost("../../proto/engine_pb") as typeof EnginePb;
    loaded = { grpc, pb, client: new stubs.EngineClient(address, grpc.credentials.createInsecure()) };
    return loaded;
  };
  return {
    warn: (message) =>
      new Promise<boolean>((resolve) => {
        try {
          const { grpc, pb, client } = load();
          const req = new pb.LogRequest();
          req.setSeverity(pb.LogSeverity.WARNING);
          req.setMessage(message);
          // A dynamic provider is not told its resource's URN: the CLI shows the warning with the stack.
          req.setUrn("");
          req.setEphemeral(false);
          client.log(req, new grpc.Metadata(), { deadline: Date.now() + LOG_DEADLINE_MS }, (error) =>
            resolve(error === null),
          );
        } catch {
          resolve(false);
        }
      }),
  };
}
