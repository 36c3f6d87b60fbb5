/**
 * A small Pulumi engine for tests and the main job: runs a real program (cmd/run) against our own
 * ResourceMonitor, drives dynamic providers through Pulumi's own provider host, and keeps the stack's
 * state in a JSON file with secrets encrypted. Its surface mirrors the Automation API's Stack
 * (setAllConfig, preview, up, refresh, destroy, outputs, exportStack) so one scenario drives both.
 */
import { mkdir, readFile } from "node:fs/promises";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import which from "which";
import {
  countSteps,
  Deployment,
  type DeploymentContext,
  deleteResource,
  type OpCounts,
  type Step,
} from "./deployment";
import { EngineError } from "./errors";
import { formatLog, type LogEntry, type LogSink } from "./log";
import { MonitorServer } from "./monitor";
import { loadPlan, newPlan, planChecker, savePlan } from "./plan";
import { runProgram } from "./program";
import { type ProjectSettings, readProject } from "./project";
import { DynamicProviderHost, type ProviderCall } from "./provider-host";
import { SecretBox } from "./secret-box";
import {
  dependencyOrder,
  emptyState,
  openState,
  type ResourceState,
  readStateFile,
  type StackState,
  saveState,
} from "./state";
import {
  containsSecret,
  markSecret,
  type PropertyMap,
  reveal,
  revealValue,
  sameValues,
  secretKeys,
} from "./values";

export type { OpCounts, Step } from "./deployment";
export type { LogEntry } from "./log";
export type { ProviderCall } from "./provider-host";

export interface ConfigValue {
  value: string;
  secret?: boolean;
}
export type ConfigMap = Record<string, ConfigValue>;
export type OutputMap = Record<string, { value: unknown; secret: boolean }>;

export interface LocalStackOptions {
  programDir: string;
  stackName: string;
  /** Like a file backend: the state lives at <stateDir>/<project>/<stack>.json. */
  stateDir: string;
  /** Encrypts secrets in state, like PULUMI_CONFIG_PASSPHRASE. */
  passphrase: string;
  /** Extra environment for the program and the provider host (the engine passes no other of the caller's env). */
  env?: Record<string, string>;
  /** Safety bound for one provider call. */
  callTimeoutMs?: number;
  /**
   * The node binary that runs the program and the provider host. Default: the `node` found on the PATH
   * of their environment (`env.PATH` when given, else this process's PATH), as the Pulumi CLI runs both
   * with the user's `node`; a test pins one to run a given Node version whatever PATH holds.
   */
  node?: string;
  /**
   * Keep the program's debug-level messages, as `pulumi up --debug` shows them. Off by default like the
   * CLI: they print whole RPC payloads, secret values included.
   */
  debugLogs?: boolean;
  /** Resource operations at once, like `pulumi up --parallel` (default: the CLI's, CPUs x 4). */
  parallel?: number;
}

export interface PreviewOptions {
  /** Like `pulumi preview --save-plan <file>`: write the plan of this preview there. */
  savePlan?: string;
}

export interface UpOptions {
  /** Like `pulumi up --plan <file>`: refuse any step the saved plan does not allow. */
  plan?: string;
}

/** The CLI's default --parallel (pulumi/pulumi pkg/cmd/pulumi/operations/up.go: GOMAXPROCS x 4). */
export function defaultParallel(): number {
  return availableParallelism() * 4;
}

export interface RunResult {
  changes: OpCounts;
  steps: Step[];
  /** What this run logged. */
  logs: LogEntry[];
}

export interface UpResult extends RunResult {
  outputs: OutputMap;
}

export class LocalStack {
  /** Every log entry of every run, in order. */
  readonly logs: LogEntry[] = [];
  /** Every provider RPC of every run, in order. */
  readonly providerCalls: ProviderCall[] = [];
  private config: ConfigMap = {};
  private active: { cancel: () => Promise<void> } | undefined;

  private constructor(
    private readonly options: LocalStackOptions,
    readonly project: ProjectSettings,
    readonly statePath: string,
  ) {}

  static async open(options: LocalStackOptions): Promise<LocalStack> {
    const project = await readProject(options.programDir);
    const dir = join(options.stateDir, project.name);
    await mkdir(dir, { recursive: true });
    return new LocalStack(options, project, join(dir, `${options.stackName}.json`));
  }

  get stackName(): string {
    return this.options.stackName;
  }

  /** Replaces the whole stack config. Keys without a namespace belong to the project, as with `pulumi config set`. */
  setAllConfig(config: ConfigMap): void {
    this.config = Object.fromEntries(Object.entries(config).map(([k, v]) => [this.qualify(k), { ...v }]));
  }

  setConfig(key: string, value: ConfigValue): void {
    this.config[this.qualify(key)] = { ...value };
  }

  getAllConfig(): ConfigMap {
    return structuredClone(this.config);
  }

  async preview(options: PreviewOptions = {}): Promise<RunResult> {
    if (!options.savePlan) return this.runProgram(true);
    const { plan, record } = newPlan(this.project.name, this.stackName);
    const result = await this.runProgram(true, { recordPlan: record });
    await savePlan(options.savePlan, plan);
    return result;
  }

  async up(options: UpOptions = {}): Promise<UpResult> {
    const checkPlan = options.plan ? planChecker(await loadPlan(options.plan)) : undefined;
    const result = await this.runProgram(false, { checkPlan });
    return { ...result, outputs: await this.outputs() };
  }

  /**
   * Like Ctrl-C during `pulumi up`: no new step starts, steps already running finish, the provider host
   * is sent Cancel, and the run fails with CANCELED. A no-op when nothing runs.
   */
  async cancel(): Promise<void> {
    await this.active?.cancel();
  }

  /** Reads every managed resource back from its provider; drops those that are gone. */
  async refresh(): Promise<RunResult> {
    return this.withProvider("refresh", async (state, provider, persist) => {
      const steps: Step[] = [];
      const kept: ResourceState[] = [];
      for (const r of state.resources) {
        if (!r.custom || r.pendingDelete) {
          kept.push(r);
          continue;
        }
        const host = await provider();
        const read = await host.read(r.urn, r.id, reveal(r.outputs), reveal(r.inputs));
        if (read.id === "") {
          steps.push({ op: "delete", urn: r.urn, keys: [] });
          continue;
        }
        const outputs = markSecret(read.properties, [...secretKeys(r.outputs), ...r.additionalSecretOutputs]);
        const inputs = read.inputs ? markSecret(read.inputs, secretKeys(r.inputs)) : r.inputs;
        const keys = Object.keys({ ...r.outputs, ...outputs })
          .filter((k) => !sameValues(revealValue(r.outputs[k] ?? null), revealValue(outputs[k] ?? null)))
          .sort();
        steps.push({ op: keys.length > 0 ? "update" : "same", urn: r.urn, keys });
        kept.push({ ...r, id: read.id, inputs, outputs });
      }
      await persist({ ...state, resources: kept });
      return steps;
    });
  }

  /** Deletes every resource, dependents first. */
  async destroy(): Promise<RunResult> {
    return this.withProvider("destroy", async (state, provider, persist) => {
      const steps: Step[] = [];
      let remaining = [...state.resources];
      for (const r of dependencyOrder(state.resources).reverse()) {
        await deleteResource(r, provider);
        remaining = remaining.filter((x) => x !== r);
        if (!r.external && !r.pendingDelete) steps.push({ op: "delete", urn: r.urn, keys: [] });
        await persist({ ...state, resources: remaining });
      }
      return steps;
    });
  }

  /** The stack's outputs from state, revealed, each flagged when secret. */
  async outputs(): Promise<OutputMap> {
    const { state } = await this.loadState();
    const stack = state.resources.find((r) => r.type === "pulumi:pulumi:Stack");
    return toOutputMap(stack?.outputs ?? {});
  }

  /** The state in memory: secrets revealed to the caller as secret values. */
  async state(): Promise<StackState> {
    return (await this.loadState()).state;
  }

  /** The state file's text, exactly as on disk (secrets sealed); "" before the first update. */
  async exportState(): Promise<string> {
    return readFile(this.statePath, "utf8").catch((error: NodeJS.ErrnoException) => {
      if (error.code === "ENOENT") return "";
      throw error;
    });
  }

  logText(): string {
    return formatLog(this.logs);
  }

  private async runProgram(
    dryRun: boolean,
    plans: Pick<DeploymentContext, "recordPlan" | "checkPlan"> = {},
  ): Promise<RunResult> {
    const operation = dryRun ? "preview" : "up";
    const { state: prior, box, check } = await this.loadState();
    const { log, logs } = this.runLog();
    const host = this.lazyHost(log);
    const config = this.plainConfig();
    const deployment = new Deployment({
      project: this.project.name,
      stack: this.stackName,
      dryRun,
      prior,
      provider: host.get,
      persist: (s) => saveState(this.statePath, s, box, check),
      log,
      parallel: this.parallel(),
      ...plans,
    });
    this.active = {
      cancel: async () => {
        deployment.cancel();
        if (host.started()) await (await host.get()).cancel();
      },
    };
    const secretConfigKeys = Object.keys(this.config).filter((k) => this.config[k]?.secret);
    const monitor = await MonitorServer.start({
      project: this.project.name,
      stack: this.stackName,
      dryRun,
      config,
      secretKeys: secretConfigKeys,
      deployment,
      log,
      debugLogs: this.options.debugLogs ?? false,
      parallel: this.parallel(),
    });
    try {
      const exitCode = await runProgram({
        node: this.node(),
        programDir: this.options.programDir,
        project: this.project,
        stack: this.stackName,
        monitorAddress: monitor.address,
        dryRun,
        config,
        secretKeys: secretConfigKeys,
        env: this.baseEnv(),
        log,
      });
      await deployment.idle();
      if (exitCode === 0 && deployment.errors.length === 0) {
        // A failed delete is recorded in deployment.errors, reported below.
        await deployment.finish().catch(() => undefined);
        await deployment.idle();
      }
      if (exitCode !== 0 || deployment.errors.length > 0) {
        throw failure(operation, deployment.errors, logs, exitCode);
      }
      return { changes: deployment.counts(), steps: deployment.steps, logs };
    } finally {
      this.active = undefined;
      await monitor.close();
      await host.close();
    }
  }

  private parallel(): number {
    return this.options.parallel ?? defaultParallel();
  }

  /** Refresh and destroy: no program, only the provider host configured with the stack's config. */
  private async withProvider(
    operation: string,
    body: (
      state: StackState,
      provider: () => Promise<DynamicProviderHost>,
      persist: (s: StackState) => Promise<void>,
    ) => Promise<Step[]>,
  ): Promise<RunResult> {
    const { state, box, check } = await this.loadState();
    const { log, logs } = this.runLog();
    const host = this.lazyHost(log);
    try {
      const steps = await body(state, host.get, (s) => saveState(this.statePath, s, box, check));
      return { changes: countSteps(steps), steps, logs };
    } catch (error) {
      const cause =
        error instanceof EngineError ? error : new EngineError("STEP_FAILED", operation, String(error));
      throw failure(operation, [cause], logs, 0);
    } finally {
      await host.close();
    }
  }

  private lazyHost(log: LogSink): {
    get: () => Promise<DynamicProviderHost>;
    started: () => boolean;
    close: () => Promise<void>;
  } {
    let started: Promise<DynamicProviderHost> | undefined;
    const get = () => {
      // From the program's directory: the providers' `require`s resolve against the installed package.
      started ??= DynamicProviderHost.start({
        node: this.node(),
        pulumiFrom: this.options.programDir,
        cwd: this.options.programDir,
        env: {
          ...this.baseEnv(),
          PULUMI_NODEJS_PROJECT: this.project.name,
          PULUMI_NODEJS_STACK: this.stackName,
          PULUMI_NODEJS_ORGANIZATION: "organization",
        },
        log,
        callTimeoutMs: this.options.callTimeoutMs ?? 120_000,
        journal: this.providerCalls,
      }).then(async (h) => {
        const secretConfigKeys = Object.keys(this.config).filter((k) => this.config[k]?.secret);
        await h.configure(this.plainConfig(), secretConfigKeys);
        return h;
      });
      return started;
    };
    const close = async () => {
      if (started) await (await started.catch(() => undefined))?.close();
    };
    return { get, started: () => started !== undefined, close };
  }

  private runLog(): { log: LogSink; logs: LogEntry[] } {
    const logs: LogEntry[] = [];
    return {
      logs,
      log: (entry) => {
        logs.push(entry);
        this.logs.push(entry);
      },
    };
  }

  private async loadState(): Promise<{ state: StackState; box: SecretBox; check: string }> {
    const file = await readStateFile(this.statePath);
    if (!file) {
      const box = SecretBox.create(this.options.passphrase);
      return { state: emptyState(this.project.name, this.stackName), box, check: box.checkValue() };
    }
    const box = SecretBox.create(this.options.passphrase, file.secrets.salt);
    return { state: openState(file, box), box, check: file.secrets.check };
  }

  private plainConfig(): Record<string, string> {
    return Object.fromEntries(Object.entries(this.config).map(([k, v]) => [k, v.value]));
  }

  /** The node binary of the program and the provider host: pinned, else `node` on their PATH. */
  node(): string {
    if (this.options.node !== undefined) return this.options.node;
    const path = this.baseEnv().PATH ?? "";
    const found = which.sync("node", { path, nothrow: true });
    if (found === null) {
      throw new EngineError(
        "NODE_NOT_FOUND",
        "engine.node",
        `no \`node\` on PATH (${path}); pin one with the node option`,
      );
    }
    return found;
  }

  private baseEnv(): Record<string, string> {
    const env: Record<string, string> = {};
    for (const key of ["PATH", "HOME", "TMPDIR", "LANG"]) {
      const value = process.env[key];
      if (value !== undefined) env[key] = value;
    }
    return { ...env, ...this.options.env };
  }

  private qualify(key: string): string {
    return key.includes(":") ? key : `${this.project.name}:${key}`;
  }
}

export function toOutputMap(outputs: PropertyMap): OutputMap {
  return Object.fromEntries(
    Object.entries(outputs).map(([k, v]) => [k, { value: revealValue(v), secret: containsSecret(v) }]),
  );
}

function failure(operation: string, errors: EngineError[], logs: LogEntry[], exitCode: number): EngineError {
  const reasons = errors.map((e) => e.message);
  const programErrors = logs.filter((l) => l.severity === "error").map((l) => l.message);
  const detail = [...reasons, ...programErrors].join("\n") || `program exited with code ${exitCode}`;
  return new EngineError(errors[0]?.code ?? "PROGRAM_FAILED", operation, detail, errors[0]?.urn);
}
