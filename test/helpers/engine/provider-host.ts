/**
 * The dynamic provider host a real engine starts for `pulumi-nodejs:dynamic:*` resources: @pulumi/pulumi's
 * cmd/dynamic-provider, spawned from the PROGRAM's directory so the serialized providers' `require`s
 * resolve against the program's node_modules (the installed package), exactly as under the Pulumi CLI.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createRequire } from "node:module";
import { join } from "node:path";
import { createInterface } from "node:readline";
import * as grpc from "@grpc/grpc-js";
import { EngineError } from "./errors";
import type { LogSink } from "./log";
import { type Empty, grpcOptions, providerGrpc, providerPb, Struct } from "./proto";
import { nameOf, typeOf } from "./urn";
import type { PropertyMap } from "./values";

export type ProviderOperation = "configure" | "check" | "diff" | "create" | "read" | "update" | "delete";

/** One provider RPC, recorded so tests can assert which calls a deployment made. */
export interface ProviderCall {
  op: ProviderOperation;
  urn: string;
}

export interface DiffResult {
  changes: "some" | "none" | "unknown";
  replaces: string[];
  deleteBeforeReplace: boolean;
}

export interface HostOptions {
  programDir: string;
  project: string;
  stack: string;
  /** Environment of the host process (the engine passes a controlled one, never the test's whole env). */
  env: Record<string, string>;
  log: LogSink;
  /** Upper bound for one provider call; a safety net, not a behaviour under test. */
  callTimeoutMs: number;
  /** Also records every call here (the caller's journal across hosts). */
  journal?: ProviderCall[];
}

export class DynamicProviderHost {
  readonly calls: ProviderCall[] = [];

  private constructor(
    private readonly child: ChildProcess,
    private readonly client: providerGrpc.ResourceProviderClient,
    private readonly options: HostOptions,
  ) {}

  static async start(options: HostOptions): Promise<DynamicProviderHost> {
    const fromProgram = createRequire(join(options.programDir, "package.json"));
    const entry = fromProgram.resolve("@pulumi/pulumi/cmd/dynamic-provider/index.js");
    // The host's only argument is the engine address; the dynamic provider does not call it back.
    const child = spawn(process.execPath, [entry, "127.0.0.1:0"], {
      cwd: options.programDir,
      env: options.env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    createInterface({ input: child.stderr! }).on("line", (line) =>
      options.log({ source: "provider", severity: "info", message: line }),
    );
    const port = await readPort(child, options.log);
    const client = new providerGrpc.ResourceProviderClient(
      `127.0.0.1:${port}`,
      grpc.credentials.createInsecure(),
      grpcOptions,
    );
    return new DynamicProviderHost(child, client, options);
  }

  /** Sends the stack's whole config (namespaced keys, secrets decrypted), as the engine does since 3.139. */
  async configure(config: Record<string, string>): Promise<void> {
    const req = new providerPb.ConfigureRequest();
    req.setArgs(Struct.fromJavaScript(config));
    for (const [key, value] of Object.entries(config)) req.getVariablesMap().set(key, value);
    req.setAcceptsecrets(true);
    req.setAcceptresources(false);
    req.setSendsOldInputs(true);
    req.setSendsOldInputsToDelete(true);
    await this.rpc<providerPb.ConfigureResponse>("configure", "", (cb) =>
      this.client.configure(req, ...this.callArgs(cb)),
    );
  }

  async check(
    urn: string,
    olds: PropertyMap,
    news: PropertyMap,
  ): Promise<{ inputs: PropertyMap; failures: string[] }> {
    const req = new providerPb.CheckRequest();
    req.setUrn(urn);
    req.setName(nameOf(urn));
    req.setType(typeOf(urn));
    req.setOlds(Struct.fromJavaScript(olds));
    req.setNews(Struct.fromJavaScript(news));
    const res = await this.rpc<providerPb.CheckResponse>("check", urn, (cb) =>
      this.client.check(req, ...this.callArgs(cb)),
    );
    return {
      inputs: (res.getInputs()?.toJavaScript() ?? {}) as PropertyMap,
      failures: res.getFailuresList().map((f) => `${f.getProperty()}: ${f.getReason()}`),
    };
  }

  async diff(
    urn: string,
    id: string,
    olds: PropertyMap,
    news: PropertyMap,
    oldInputs: PropertyMap,
  ): Promise<DiffResult> {
    const req = new providerPb.DiffRequest();
    req.setUrn(urn);
    req.setId(id);
    req.setName(nameOf(urn));
    req.setType(typeOf(urn));
    req.setOlds(Struct.fromJavaScript(olds));
    req.setNews(Struct.fromJavaScript(news));
    req.setOldInputs(Struct.fromJavaScript(oldInputs));
    const res = await this.rpc<providerPb.DiffResponse>("diff", urn, (cb) =>
      this.client.diff(req, ...this.callArgs(cb)),
    );
    const changes = res.getChanges();
    const Changes = providerPb.DiffResponse.DiffChanges;
    return {
      changes: changes === Changes.DIFF_SOME ? "some" : changes === Changes.DIFF_NONE ? "none" : "unknown",
      replaces: res.getReplacesList(),
      deleteBeforeReplace: res.getDeletebeforereplace(),
    };
  }

  async create(urn: string, inputs: PropertyMap): Promise<{ id: string; outputs: PropertyMap }> {
    const req = new providerPb.CreateRequest();
    req.setUrn(urn);
    req.setName(nameOf(urn));
    req.setType(typeOf(urn));
    req.setProperties(Struct.fromJavaScript(inputs));
    const res = await this.rpc<providerPb.CreateResponse>("create", urn, (cb) =>
      this.client.create(req, ...this.callArgs(cb)),
    );
    return { id: res.getId(), outputs: (res.getProperties()?.toJavaScript() ?? {}) as PropertyMap };
  }

  async read(
    urn: string,
    id: string,
    props: PropertyMap,
    inputs: PropertyMap,
  ): Promise<{ id: string; outputs: PropertyMap; inputs?: PropertyMap }> {
    const req = new providerPb.ReadRequest();
    req.setUrn(urn);
    req.setId(id);
    req.setName(nameOf(urn));
    req.setType(typeOf(urn));
    req.setProperties(Struct.fromJavaScript(props));
    req.setInputs(Struct.fromJavaScript(inputs));
    const res = await this.rpc<providerPb.ReadResponse>("read", urn, (cb) =>
      this.client.read(req, ...this.callArgs(cb)),
    );
    const returnedInputs = res.getInputs()?.toJavaScript() as PropertyMap | undefined;
    return {
      id: res.getId(),
      outputs: (res.getProperties()?.toJavaScript() ?? {}) as PropertyMap,
      ...(returnedInputs && Object.keys(returnedInputs).length > 0 ? { inputs: returnedInputs } : {}),
    };
  }

  async update(
    urn: string,
    id: string,
    olds: PropertyMap,
    news: PropertyMap,
    oldInputs: PropertyMap,
  ): Promise<{ outputs: PropertyMap }> {
    const req = new providerPb.UpdateRequest();
    req.setUrn(urn);
    req.setId(id);
    req.setName(nameOf(urn));
    req.setType(typeOf(urn));
    req.setOlds(Struct.fromJavaScript(olds));
    req.setNews(Struct.fromJavaScript(news));
    req.setOldInputs(Struct.fromJavaScript(oldInputs));
    const res = await this.rpc<providerPb.UpdateResponse>("update", urn, (cb) =>
      this.client.update(req, ...this.callArgs(cb)),
    );
    return { outputs: (res.getProperties()?.toJavaScript() ?? {}) as PropertyMap };
  }

  async delete(urn: string, id: string, outputs: PropertyMap, inputs: PropertyMap): Promise<void> {
    const req = new providerPb.DeleteRequest();
    req.setUrn(urn);
    req.setId(id);
    req.setName(nameOf(urn));
    req.setType(typeOf(urn));
    req.setProperties(Struct.fromJavaScript(outputs));
    req.setOldInputs(Struct.fromJavaScript(inputs));
    await this.rpc<Empty>("delete", urn, (cb) => this.client.delete(req, ...this.callArgs(cb)));
  }

  async close(): Promise<void> {
    this.client.close();
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => this.child.once("exit", () => resolve()));
    this.child.kill();
    await exited;
  }

  private callArgs<Res>(
    callback: (err: grpc.ServiceError | null, res: Res) => void,
  ): [grpc.Metadata, Partial<grpc.CallOptions>, (err: grpc.ServiceError | null, res: Res) => void] {
    return [new grpc.Metadata(), { deadline: Date.now() + this.options.callTimeoutMs }, callback];
  }

  private rpc<Res>(
    op: ProviderOperation,
    urn: string,
    invoke: (callback: (err: grpc.ServiceError | null, res: Res) => void) => unknown,
  ): Promise<Res> {
    this.calls.push({ op, urn });
    this.options.journal?.push({ op, urn });
    return new Promise<Res>((resolve, reject) => {
      invoke((err, res) => {
        if (err) {
          reject(new EngineError(`PROVIDER_${op.toUpperCase()}_FAILED`, `provider.${op}`, err.details, urn));
        } else {
          resolve(res);
        }
      });
    });
  }
}

/** The host prints its port on the first stdout line; anything after is the providers' own output. */
function readPort(child: ChildProcess, log: LogSink): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    let port: number | undefined;
    const lines = createInterface({ input: child.stdout! });
    lines.on("line", (line) => {
      if (port === undefined) {
        port = Number.parseInt(line, 10);
        if (Number.isInteger(port)) resolve(port);
        else reject(new EngineError("HOST_START_FAILED", "provider.start", `unexpected first line: ${line}`));
        return;
      }
      log({ source: "provider", severity: "info", message: line });
    });
    child.once("error", (error) =>
      reject(new EngineError("HOST_START_FAILED", "provider.start", error.message)),
    );
    child.once("exit", (code) => {
      if (port === undefined) {
        reject(new EngineError("HOST_START_FAILED", "provider.start", `host exited with code ${code}`));
      }
    });
  });
}
