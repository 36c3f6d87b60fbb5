import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import * as grpc from "@grpc/grpc-js";
import * as pulumi from "@pulumi/pulumi";
import { ResourceProviderClient } from "@pulumi/pulumi/proto/provider_grpc_pb";
import * as proto from "@pulumi/pulumi/proto/provider_pb";
import type { Struct as StructType } from "google-protobuf/google/protobuf/struct_pb";

/**
 * A client of Pulumi's own dynamic-provider host (the process the Pulumi CLI starts for dynamic
 * resources): spawn it, call Configure, then Check/Diff/Create/Read/Update/Delete over gRPC exactly as
 * the engine does, with the serialized provider under `__provider`.
 *
 * Running from this checkout: the serialized provider `require`s its implementation as
 * `runpodkit/provider/<file>`. The host resolves that from its cwd's node_modules, where this package
 * is not installed, so `start()` puts a temporary folder on NODE_PATH holding a stand-in `runpodkit`
 * package (a bare package.json, so no "exports" map can hide a path, and symlinks to the checkout's
 * provider/ and dist/), and loads tsx so the TypeScript sources run. Nothing in the checkout changes.
 * Installed from npm the specifier is `runpodkit/dist/provider/<file>` and needs neither.
 */

export const PROJECT_ROOT = resolve(__dirname, "../..");
const HOST_SCRIPT = join(PROJECT_ROOT, "node_modules/@pulumi/pulumi/cmd/dynamic-provider/index.js");
const NODE_BINARY = join(PROJECT_ROOT, "node_modules/.bin/node");

// The Struct class of the google-protobuf copy that @pulumi/pulumi's generated messages use: mixing
// copies of jspb breaks serialization, and the project's top-level google-protobuf is another major.
const pulumiRequire = createRequire(require.resolve("@pulumi/pulumi/proto/provider_pb"));
const Struct: typeof StructType = pulumiRequire("google-protobuf/google/protobuf/struct_pb").Struct;

export type Props = Record<string, unknown>;

export interface HostOptions {
  /** Working directory of the host; resolution of the provider's `require`s starts here. */
  cwd?: string;
  /** Extra environment for the host (the parent's environment is NOT passed, except PATH and HOME). */
  env?: Record<string, string>;
  /** Make `runpodkit/...` resolve to this checkout and run its TypeScript sources (default true). */
  fromCheckout?: boolean;
}

export interface CheckResult {
  inputs: Props;
  failures: { property: string; reason: string }[];
}

export interface DiffResult {
  changes: "none" | "some" | "unknown";
  replaces: string[];
  deleteBeforeReplace: boolean;
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

export class PulumiProviderHost {
  readonly #child: ChildProcess;
  readonly #client: ResourceProviderClient;
  readonly #tempDir: string | undefined;
  #stderr = "";

  private constructor(child: ChildProcess, client: ResourceProviderClient, tempDir: string | undefined) {
    this.#child = child;
    this.#client = client;
    this.#tempDir = tempDir;
    child.stderr?.on("data", (chunk: Buffer) => {
      this.#stderr += chunk.toString("utf8");
    });
  }

  /** Everything the host wrote to stderr so far (tests assert it holds no credential). */
  get stderr(): string {
    return this.#stderr;
  }

  static async start(options: HostOptions = {}): Promise<PulumiProviderHost> {
    const fromCheckout = options.fromCheckout ?? true;
    let tempDir: string | undefined;
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? tmpdir(),
      ...options.env,
    };
    const args: string[] = [];
    if (fromCheckout) {
      tempDir = mkdtempSync(join(tmpdir(), "runpodkit-host-"));
      const standIn = join(tempDir, "runpodkit");
      mkdirSync(standIn);
      writeFileSync(join(standIn, "package.json"), JSON.stringify({ name: "runpodkit", private: true }));
      for (const folder of ["provider", "dist"])
        symlinkSync(join(PROJECT_ROOT, folder), join(standIn, folder), "dir");
      env.NODE_PATH = tempDir;
      args.push("--import", "tsx");
    }
    // The engine address argument is required by the host but unused by dynamic providers.
    args.push(HOST_SCRIPT, "127.0.0.1:0");
    const child = spawn(NODE_BINARY, args, {
      cwd: options.cwd ?? PROJECT_ROOT,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let early = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      early += chunk.toString("utf8");
    });
    const port = await new Promise<string>((resolvePort, reject) => {
      const lines = createInterface({ input: child.stdout! });
      lines.once("line", (line) => resolvePort(line.trim()));
      child.once("exit", (code) =>
        reject(new Error(`provider host exited (${code}) before listening: ${early}`)),
      );
      child.once("error", reject);
    });
    const client = new ResourceProviderClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    const host = new PulumiProviderHost(child, client, tempDir);
    host.#stderr = early;
    return host;
  }

  /** Sends the stack's config (namespaced keys, secrets decrypted) as the engine does since 3.139. */
  async configure(config: Record<string, string>): Promise<void> {
    const request = new proto.ConfigureRequest();
    const variables = request.getVariablesMap();
    for (const [key, value] of Object.entries(config)) variables.set(key, value);
    request.setArgs(Struct.fromJavaScript(config));
    request.setAcceptsecrets(false);
    request.setAcceptresources(false);
    await this.#call<proto.ConfigureRequest, proto.ConfigureResponse>("configure", request);
  }

  async check(urn: string, olds: Props, news: Props): Promise<CheckResult> {
    const request = new proto.CheckRequest();
    request.setUrn(urn);
    request.setOlds(toStruct(olds));
    request.setNews(toStruct(news));
    const response = await this.#call<proto.CheckRequest, proto.CheckResponse>("check", request);
    return {
      inputs: fromStruct(response.getInputs()),
      failures: response.getFailuresList().map((f) => ({ property: f.getProperty(), reason: f.getReason() })),
    };
  }

  async diff(urn: string, id: string, olds: Props, news: Props): Promise<DiffResult> {
    const request = new proto.DiffRequest();
    request.setUrn(urn);
    request.setId(id);
    request.setOlds(toStruct(olds));
    request.setNews(toStruct(news));
    const response = await this.#call<proto.DiffRequest, proto.DiffResponse>("diff", request);
    const kinds = proto.DiffResponse.DiffChanges;
    const changes = response.getChanges();
    return {
      changes: changes === kinds.DIFF_SOME ? "some" : changes === kinds.DIFF_NONE ? "none" : "unknown",
      replaces: response.getReplacesList(),
      deleteBeforeReplace: response.getDeletebeforereplace(),
    };
  }

  async create(urn: string, props: Props): Promise<{ id: string; properties: Props }> {
    const request = new proto.CreateRequest();
    request.setUrn(urn);
    request.setProperties(toStruct(props));
    const response = await this.#call<proto.CreateRequest, proto.CreateResponse>("create", request);
    return { id: response.getId(), properties: fromStruct(response.getProperties()) };
  }

  /** Refresh passes the old outputs as `properties`; `Resource.get` passes only `inputs`. */
  async read(
    urn: string,
    id: string,
    properties: Props,
    inputs: Props = {},
  ): Promise<{ id: string; properties: Props; inputs: Props | undefined }> {
    const request = new proto.ReadRequest();
    request.setUrn(urn);
    request.setId(id);
    request.setProperties(toStruct(properties));
    request.setInputs(toStruct(inputs));
    const response = await this.#call<proto.ReadRequest, proto.ReadResponse>("read", request);
    const returnedInputs = response.getInputs();
    return {
      id: response.getId(),
      properties: fromStruct(response.getProperties()),
      inputs: returnedInputs ? fromStruct(returnedInputs) : undefined,
    };
  }

  async update(urn: string, id: string, olds: Props, news: Props): Promise<{ properties: Props }> {
    const request = new proto.UpdateRequest();
    request.setUrn(urn);
    request.setId(id);
    request.setOlds(toStruct(olds));
    request.setNews(toStruct(news));
    const response = await this.#call<proto.UpdateRequest, proto.UpdateResponse>("update", request);
    return { properties: fromStruct(response.getProperties()) };
  }

  async delete(urn: string, id: string, properties: Props): Promise<void> {
    const request = new proto.DeleteRequest();
    request.setUrn(urn);
    request.setId(id);
    request.setProperties(toStruct(properties));
    await this.#call<proto.DeleteRequest, unknown>("delete", request);
  }

  async stop(): Promise<void> {
    this.#client.close();
    if (this.#child.exitCode === null && this.#child.signalCode === null) {
      const exited = new Promise((done) => this.#child.once("exit", done));
      this.#child.kill("SIGTERM");
      await exited;
    }
    if (this.#tempDir) rmSync(this.#tempDir, { recursive: true, force: true });
  }

  #call<Req, Res>(method: string, request: Req): Promise<Res> {
    const fn = (this.#client as unknown as Record<string, UnaryMethod<Req, Res>>)[method];
    if (!fn) throw new Error(`no RPC ${method}`);
    return new Promise<Res>((resolveCall, reject) => {
      fn.call(this.#client, request, (error, response) => {
        if (error) reject(new HostCallError(method, error));
        else resolveCall(response);
      });
    });
  }
}

type UnaryMethod<Req, Res> = (
  request: Req,
  callback: (error: grpc.ServiceError | null, response: Res) => void,
) => grpc.ClientUnaryCall;

/** A failed RPC: the message is what the engine would show the user. */
export class HostCallError extends Error {
  readonly method: string;
  readonly grpcCode: number;

  constructor(method: string, error: grpc.ServiceError) {
    super(`${method}: ${error.details || error.message}`);
    this.name = "HostCallError";
    this.method = method;
    this.grpcCode = error.code;
  }
}

function toStruct(props: Props): StructType {
  return Struct.fromJavaScript(props as Parameters<typeof Struct.fromJavaScript>[0]);
}

function fromStruct(struct: StructType | undefined): Props {
  return (struct?.toJavaScript() ?? {}) as Props;
}
