/**
 * A client of Pulumi's own dynamic-provider host, the process a real engine starts for
 * `pulumi-nodejs:dynamic:*` resources (@pulumi/pulumi's cmd/dynamic-provider): spawn it, then
 * Configure/Check/Diff/Create/Read/Update/Delete over gRPC with the requests the engine sends, the
 * serialized provider under `__provider`. The test engine starts it from the PROGRAM's directory so the
 * providers' `require`s resolve against the installed package, as under the Pulumi CLI; the provider
 * tests start it from the checkout (test/helpers/pulumi-host.ts).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createRequire } from "node:module";
import { join } from "node:path";
import { createInterface } from "node:readline";
import * as grpc from "@grpc/grpc-js";
import { EngineError } from "./errors";
import type { LogSink } from "./log";
import { Empty, grpcOptions, providerGrpc, providerPb, Struct } from "./proto";
import { nameOf, typeOf } from "./urn";
import { makeSecret, type PropertyMap } from "./values";

/** What a call sends: a plain JSON record (the engine's PropertyMap or a test's literal). */
export type Props = Readonly<Record<string, unknown>>;

export type ProviderOperation =
  | "configure"
  | "check"
  | "diff"
  | "create"
  | "read"
  | "update"
  | "delete"
  | "cancel";

/** One provider RPC, recorded so tests can assert which calls a deployment made. */
export interface ProviderCall {
  op: ProviderOperation;
  urn: string;
  /** The `timeout` a Create/Update/Delete request carried (from customTimeouts), in seconds. */
  timeoutSeconds?: number;
  /** Configure: the config keys sent secret-wrapped, as the CLI sends secret config. */
  secretKeys?: string[];
}

export interface CheckResult {
  inputs: PropertyMap;
  failures: { property: string; reason: string }[];
}

export interface DiffResult {
  changes: "some" | "none" | "unknown";
  replaces: string[];
  deleteBeforeReplace: boolean;
  /** The property keys the provider names as changed, when it names any (Pulumi's dynamic-provider host never does). */
  diffs?: string[];
}

export interface HostOptions {
  /** The folder whose installed @pulumi/pulumi provides the host script. */
  pulumiFrom: string;
  /** Working directory of the host; resolution of the providers' `require`s starts here. */
  cwd: string;
  /** The whole environment of the host process (never the test's own env). */
  env: Record<string, string>;
  /** The node binary (default: the one running this process). */
  node?: string;
  /** Node flags before the host script (e.g. `--import tsx`). */
  nodeArgs?: string[];
  /** Receives each line the host prints after its port (stdout) and on stderr. */
  log?: LogSink;
  /** Upper bound for one provider call; a safety net, not a behaviour under test (default: none). */
  callTimeoutMs?: number;
  /** Also records every call here (the caller's journal across hosts). */
  journal?: ProviderCall[];
  /** Runs once the host has exited on close(), e.g. to remove files made for it. */
  onClose?: () => void;
  /**
   * The engine address the host is started with, as the CLI passes its own (default `127.0.0.1:0`:
   * no engine, so providers that would log through it fall back to their output).
   */
  engineAddress?: string;
}

/** Where a folder's installed @pulumi/pulumi keeps the dynamic-provider host. */
export function hostScriptFrom(dir: string): string {
  return createRequire(join(dir, "package.json")).resolve("@pulumi/pulumi/cmd/dynamic-provider/index.js");
}

export class DynamicProviderHost {
  readonly calls: ProviderCall[] = [];

  private constructor(
    private readonly child: ChildProcess,
    private readonly client: providerGrpc.ResourceProviderClient,
    private readonly options: HostOptions,
    private readonly output: { stderr: string },
  ) {}

  /** Everything the host wrote to stderr so far (tests assert it holds no credential). */
  get stderr(): string {
    return this.output.stderr;
  }

  static async start(options: HostOptions): Promise<DynamicProviderHost> {
    // The host's only argument is the engine address; the host itself never calls it back.
    const engine = options.engineAddress ?? "127.0.0.1:0";
    const args = [...(options.nodeArgs ?? []), hostScriptFrom(options.pulumiFrom), engine];
    const child = spawn(options.node ?? process.execPath, args, {
      cwd: options.cwd,
      env: options.env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    const output = { stderr: "" };
    child.stderr?.on("data", (chunk: Buffer) => {
      output.stderr += chunk.toString("utf8");
    });
    const log = options.log;
    if (log) {
      createInterface({ input: child.stderr! }).on("line", (line) =>
        log({ source: "provider", severity: "info", message: line }),
      );
    }
    const port = await readPort(child, () => output.stderr, log);
    const client = new providerGrpc.ResourceProviderClient(
      `127.0.0.1:${port}`,
      grpc.credentials.createInsecure(),
      grpcOptions,
    );
    return new DynamicProviderHost(child, client, options, output);
  }

  /**
   * Sends the stack's whole config (namespaced keys), as the engine does since 3.139: secret values in
   * `args` secret-wrapped (the host unwraps them), `variables` plain (the deprecated field).
   */
  async configure(config: Record<string, string>, secretKeys: readonly string[] = []): Promise<void> {
    const req = new providerPb.ConfigureRequest();
    const args = Object.fromEntries(
      Object.entries(config).map(([k, v]) => [k, secretKeys.includes(k) ? makeSecret(v) : v]),
    );
    req.setArgs(Struct.fromJavaScript(args));
    for (const [key, value] of Object.entries(config)) req.getVariablesMap().set(key, value);
    req.setAcceptsecrets(true);
    req.setAcceptresources(false);
    req.setSendsOldInputs(true);
    req.setSendsOldInputsToDelete(true);
    const wrapped = Object.keys(config).filter((k) => secretKeys.includes(k));
    await this.rpc<providerPb.ConfigureResponse>(
      "configure",
      "",
      (cb) => this.client.configure(req, ...this.callArgs(cb)),
      { secretKeys: wrapped },
    );
  }

  async check(urn: string, olds: Props, news: Props): Promise<CheckResult> {
    const req = new providerPb.CheckRequest();
    address(req, urn);
    req.setOlds(toStruct(olds));
    req.setNews(toStruct(news));
    const res = await this.rpc<providerPb.CheckResponse>("check", urn, (cb) =>
      this.client.check(req, ...this.callArgs(cb)),
    );
    return {
      inputs: fromStruct(res.getInputs()),
      failures: res.getFailuresList().map((f) => ({ property: f.getProperty(), reason: f.getReason() })),
    };
  }

  async diff(urn: string, id: string, olds: Props, news: Props, oldInputs: Props = {}): Promise<DiffResult> {
    const req = new providerPb.DiffRequest();
    address(req, urn);
    req.setId(id);
    req.setOlds(toStruct(olds));
    req.setNews(toStruct(news));
    req.setOldInputs(toStruct(oldInputs));
    const res = await this.rpc<providerPb.DiffResponse>("diff", urn, (cb) =>
      this.client.diff(req, ...this.callArgs(cb)),
    );
    const changes = res.getChanges();
    const Changes = providerPb.DiffResponse.DiffChanges;
    return {
      changes: changes === Changes.DIFF_SOME ? "some" : changes === Changes.DIFF_NONE ? "none" : "unknown",
      replaces: res.getReplacesList(),
      deleteBeforeReplace: res.getDeletebeforereplace(),
      ...(res.getDiffsList().length > 0 ? { diffs: res.getDiffsList() } : {}),
    };
  }

  async create(
    urn: string,
    inputs: Props,
    timeoutSeconds?: number,
  ): Promise<{ id: string; properties: PropertyMap }> {
    const req = new providerPb.CreateRequest();
    address(req, urn);
    req.setProperties(toStruct(inputs));
    if (timeoutSeconds !== undefined) req.setTimeout(timeoutSeconds);
    const res = await this.rpc<providerPb.CreateResponse>(
      "create",
      urn,
      (cb) => this.client.create(req, ...this.callArgs(cb, timeoutSeconds)),
      { timeoutSeconds },
    );
    return { id: res.getId(), properties: fromStruct(res.getProperties()) };
  }

  /** Refresh passes the old outputs as `properties`; `Resource.get` passes only `inputs`. */
  async read(
    urn: string,
    id: string,
    properties: Props,
    inputs: Props = {},
  ): Promise<{ id: string; properties: PropertyMap; inputs?: PropertyMap }> {
    const req = new providerPb.ReadRequest();
    address(req, urn);
    req.setId(id);
    req.setProperties(toStruct(properties));
    req.setInputs(toStruct(inputs));
    const res = await this.rpc<providerPb.ReadResponse>("read", urn, (cb) =>
      this.client.read(req, ...this.callArgs(cb)),
    );
    const returnedInputs = res.getInputs()?.toJavaScript() as PropertyMap | undefined;
    return {
      id: res.getId(),
      properties: fromStruct(res.getProperties()),
      ...(returnedInputs && Object.keys(returnedInputs).length > 0 ? { inputs: returnedInputs } : {}),
    };
  }

  async update(
    urn: string,
    id: string,
    olds: Props,
    news: Props,
    oldInputs: Props = {},
    timeoutSeconds?: number,
  ): Promise<{ properties: PropertyMap }> {
    const req = new providerPb.UpdateRequest();
    address(req, urn);
    req.setId(id);
    req.setOlds(toStruct(olds));
    req.setNews(toStruct(news));
    req.setOldInputs(toStruct(oldInputs));
    if (timeoutSeconds !== undefined) req.setTimeout(timeoutSeconds);
    const res = await this.rpc<providerPb.UpdateResponse>(
      "update",
      urn,
      (cb) => this.client.update(req, ...this.callArgs(cb, timeoutSeconds)),
      { timeoutSeconds },
    );
    return { properties: fromStruct(res.getProperties()) };
  }

  async delete(
    urn: string,
    id: string,
    properties: Props,
    oldInputs: Props = {},
    timeoutSeconds?: number,
  ): Promise<void> {
    const req = new providerPb.DeleteRequest();
    address(req, urn);
    req.setId(id);
    req.setProperties(toStruct(properties));
    req.setOldInputs(toStruct(oldInputs));
    if (timeoutSeconds !== undefined) req.setTimeout(timeoutSeconds);
    await this.rpc<Empty>(
      "delete",
      urn,
      (cb) => this.client.delete(req, ...this.callArgs(cb, timeoutSeconds)),
      { timeoutSeconds },
    );
  }

  /** What the CLI sends on Ctrl-C: the provider should stop what it is doing (Pulumi's host acknowledges it). */
  async cancel(): Promise<void> {
    await this.rpc<Empty>("cancel", "", (cb) => this.client.cancel(new Empty(), ...this.callArgs(cb)));
  }

  async close(): Promise<void> {
    this.client.close();
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise<void>((resolve) => this.child.once("exit", () => resolve()));
      this.child.kill();
      await exited;
    }
    this.options.onClose?.();
  }

  /** The call's deadline: the safety bound, or longer when the resource's customTimeouts ask for more. */
  private callArgs<Res>(
    callback: (err: grpc.ServiceError | null, res: Res) => void,
    timeoutSeconds?: number,
  ): [grpc.Metadata, Partial<grpc.CallOptions>, (err: grpc.ServiceError | null, res: Res) => void] {
    const bound = this.options.callTimeoutMs;
    const asked = timeoutSeconds === undefined ? undefined : timeoutSeconds * 1000 + 30_000;
    const timeout = bound === undefined ? undefined : Math.max(bound, asked ?? 0);
    return [new grpc.Metadata(), timeout === undefined ? {} : { deadline: Date.now() + timeout }, callback];
  }

  private rpc<Res>(
    op: ProviderOperation,
    urn: string,
    invoke: (callback: (err: grpc.ServiceError | null, res: Res) => void) => unknown,
    detail: Omit<ProviderCall, "op" | "urn"> = {},
  ): Promise<Res> {
    const recorded = Object.fromEntries(Object.entries(detail).filter(([, v]) => v !== undefined));
    this.calls.push({ op, urn, ...recorded });
    this.options.journal?.push({ op, urn, ...recorded });
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

/** Every resource request names its resource the same three ways. */
function address(
  req: { setUrn(urn: string): unknown; setName(name: string): unknown; setType(type: string): unknown },
  urn: string,
): void {
  req.setUrn(urn);
  req.setName(nameOf(urn));
  req.setType(typeOf(urn));
}

function toStruct(props: Props): Struct {
  return Struct.fromJavaScript(props as Parameters<typeof Struct.fromJavaScript>[0]);
}

function fromStruct(struct: Struct | undefined): PropertyMap {
  return (struct?.toJavaScript() ?? {}) as PropertyMap;
}

/** The host prints its port on the first stdout line; anything after is the providers' own output. */
function readPort(child: ChildProcess, stderr: () => string, log: LogSink | undefined): Promise<number> {
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
      log?.({ source: "provider", severity: "info", message: line });
    });
    child.once("error", (error) =>
      reject(new EngineError("HOST_START_FAILED", "provider.start", error.message)),
    );
    child.once("exit", (code) => {
      if (port === undefined) {
        const output = stderr();
        const detail = output ? `: ${output}` : "";
        reject(
          new EngineError("HOST_START_FAILED", "provider.start", `host exited with code ${code}${detail}`),
        );
      }
    });
  });
}
