import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import * as grpc from "@grpc/grpc-js";
import * as pulumi from "@pulumi/pulumi";
import { Empty, engineGrpc, enginePb, grpcOptions } from "../../engine/proto";
import { DynamicProviderHost } from "../../engine/provider-host";

/**
 * Pulumi's own dynamic-provider host (the process the Pulumi CLI starts for dynamic resources), started
 * from this checkout for the provider tests; the client is the test engine's (engine/provider-host.ts).
 *
 * Running from this checkout: the serialized provider `require`s its implementation as
 * `runpodkit/provider/<file>`. The host resolves that from its cwd's node_modules first, and the
 * checkout's node_modules/runpodkit (the package linked to itself, for the root program) has an
 * "exports" map that hides provider/. So the host runs in a temporary folder, with that folder on
 * NODE_PATH holding a stand-in `runpodkit` package (a bare package.json, so no "exports" map can hide a
 * path, and symlinks to the checkout's provider/ and dist/), and loads tsx so the TypeScript sources
 * run. Nothing in the checkout changes.
 * Installed from npm the specifier is `runpodkit/dist/provider/<file>` and needs neither.
 */

export const PROJECT_ROOT = resolve(__dirname, "../..");
const NODE_BINARY = join(PROJECT_ROOT, "node_modules/.bin/node");

export type { DynamicProviderHost, Props } from "../../engine/provider-host";

export interface CheckoutHostOptions {
  /** Working directory of the host; resolution of the provider's `require`s starts here. */
  cwd?: string;
  /** Extra environment for the host (the parent's environment is NOT passed, except PATH and HOME). */
  env?: Record<string, string>;
  /** Make `runpodkit/...` resolve to this checkout and run its TypeScript sources (default true). */
  fromCheckout?: boolean;
  /** The engine address the host gets, as from the CLI (e.g. a startEngineLog()); default none. */
  engineAddress?: string;
}

/** The addresses a provider needs, as Configure receives a stack's config. */
export interface ServiceAddresses {
  restUrl: string;
  graphqlUrl: string;
  queueUrl: string;
}

/**
 * The `runpodkit:*` stack config of a stack on `service` with `apiKey`, as a host's configure() takes
 * it; `extra` adds or overrides keys (another queueUrl, deleteTimeout, ...).
 */
export function stackConfig(
  service: ServiceAddresses,
  apiKey: string,
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    "runpodkit:apiKey": apiKey,
    "runpodkit:restUrl": service.restUrl,
    "runpodkit:graphqlUrl": service.graphqlUrl,
    "runpodkit:queueUrl": service.queueUrl,
    ...extra,
  };
}

/** Starts the host with the project's @pulumi/pulumi and node; close() also removes the stand-in. */
export function startCheckoutHost(options: CheckoutHostOptions = {}): Promise<DynamicProviderHost> {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "",
    HOME: process.env.HOME ?? tmpdir(),
    ...options.env,
  };
  const nodeArgs: string[] = [];
  let tempDir: string | undefined;
  if (options.fromCheckout ?? true) {
    tempDir = mkdtempSync(join(tmpdir(), "runpodkit-host-"));
    const standIn = join(tempDir, "runpodkit");
    mkdirSync(standIn);
    writeFileSync(join(standIn, "package.json"), JSON.stringify({ name: "runpodkit", private: true }));
    for (const folder of ["provider", "dist"])
      symlinkSync(join(PROJECT_ROOT, folder), join(standIn, folder), "dir");
    env.NODE_PATH = tempDir;
    // By URL: the host's cwd is the temporary folder, where a bare "tsx" would not resolve.
    nodeArgs.push("--import", pathToFileURL(require.resolve("tsx")).href);
  }
  const removeStandIn = () => {
    if (tempDir) rmSync(tempDir, { recursive: true, force: true });
  };
  return DynamicProviderHost.start({
    pulumiFrom: PROJECT_ROOT,
    cwd: options.cwd ?? tempDir ?? PROJECT_ROOT,
    env,
    node: NODE_BINARY,
    nodeArgs,
    onClose: removeStandIn,
    ...(options.engineAddress === undefined ? {} : { engineAddress: options.engineAddress }),
  }).catch((error: unknown) => {
    removeStandIn();
    throw error;
  });
}

/** Serializes a dynamic provider object the way `pulumi.dynamic.Resource` does. */
export async function serializeProvider(provider: pulumi.dynamic.ResourceProvider): Promise<string> {
  const serialized = await pulumi.runtime.serializeFunction(() => provider, { allowSecrets: true });
  return serialized.text;
}

/** The URN the engine would give a dynamic resource of this package. */
export function dynamicUrn(type: string, name: string, stack = "test", project = "runpodkit-test"): string {
  return `urn:pulumi:${stack}::${project}::pulumi-nodejs:dynamic/runpodkit:${type}::${name}`;
}

/** One Engine.Log call as the CLI's engine receives it (pkg/host/host_server.go in pulumi/pulumi). */
export interface EngineLogEntry {
  severity: "debug" | "info" | "warning" | "error";
  urn: string;
  message: string;
  ephemeral: boolean;
}

/**
 * The Log RPC of the engine server the CLI gives each provider plugin (its only argument), recording
 * each call; the Engine service's other calls answer UNIMPLEMENTED.
 */
export async function startEngineLog(): Promise<{
  address: string;
  entries: EngineLogEntry[];
  close(): Promise<void>;
}> {
  const entries: EngineLogEntry[] = [];
  const Severity = enginePb.LogSeverity;
  const names = new Map<number, EngineLogEntry["severity"]>([
    [Severity.DEBUG, "debug"],
    [Severity.INFO, "info"],
    [Severity.WARNING, "warning"],
    [Severity.ERROR, "error"],
  ]);
  const unimplemented = (_call: unknown, callback: grpc.sendUnaryData<never>) =>
    callback({ code: grpc.status.UNIMPLEMENTED, details: "not implemented by this stand-in" }, null);
  const server = new grpc.Server(grpcOptions);
  server.addService(engineGrpc.EngineService, {
    log: (call, callback) => {
      const req = call.request;
      entries.push({
        severity: names.get(req.getSeverity()) ?? "info",
        urn: req.getUrn(),
        message: req.getMessage(),
        ephemeral: req.getEphemeral(),
      });
      callback(null, new Empty());
    },
    getRootResource: unimplemented,
    setRootResource: unimplemented,
    startDebugging: unimplemented,
    requirePulumiVersion: unimplemented,
  } satisfies engineGrpc.IEngineServer);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  return {
    address: `127.0.0.1:${port}`,
    entries,
    close: () => new Promise<void>((resolve) => server.tryShutdown(() => resolve())),
  };
}
