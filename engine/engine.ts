/**
 * A small Pulumi engine for tests and the main job: runs a real program (cmd/run) against our own
 * ResourceMonitor, drives dynamic providers through Pulumi's own provider host, and keeps the stack's
 * state in a JSON file with secrets encrypted. Its surface mirrors the Automation API's Stack
 * (setAllConfig, preview, up, refresh, destroy, outputs, exportStack) so one scenario drives both.
 */
import { mkdir, readFile } from "node:fs/promises";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import pLimit from "p-limit";
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
  coalescedWrites,
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
  /** Like `pulumi preview --replace <urn>` (repeatable): these resources are replaced. */
  replace?: string[];
}

export interface UpOptions {
  /** Like `pulumi up --plan <file>`: refuse any step the saved plan does not allow. */
  plan?: string;
  /** Like `pulumi up --replace <urn>` (repeatable): these resources are replaced. */
  replace?: string[];
}

/** The URNs of `--replace`, as a set (undefined when none). */
function targetedReplace(urns: string[] | undefined): ReadonlySet<string> | undefined {
  return urns === undefined || urns.length === 0 ? undefined : new Set(urns);
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
    const replace = targetedReplace(options.replace);
    if (!options.savePlan) return this.runProgram(true, { replace });
    const { plan, record } = newPlan(this.project.name, this.stackName);
    const result = await this.runProgram(true, { recordPlan: record, replace });
    await savePlan(options.savePlan, plan);
    return result;
  }

  async up(options: UpOptions = {}): Promise<UpResult> {
    const checkPlan = options.plan ? planChecker(await loadPlan(options.plan)) : undefined;
    const result = await this.runProgram(false, { checkPlan, replace: targetedReplace(options.replace) });
    return { ...result, outputs: await this.outputs() };
  }

  /**
   * Like Ctrl-C during `pulumi up`: no new step starts, steps already running finish, the provider host
   * is sent Cancel, and the run fails with CANCELED. A no-op when nothing runs.
   */
  async cancel(): Promise<void> {
    await this.active?.cancel();
  }

  /**
   * Reads every managed resource back from its provider; drops those that are gone. As in
   * `pulumi refresh`, reads run in parallel (bounded like --parallel), and what was read is saved even
   * when another read failed: a resource whose read failed keeps its state, and the run then fails
   * with the first failure (state is written once, after every read ended).
   */
  async refresh(): Promise<RunResult> {
    return this.withProvider("refresh", async (state, provider, persist) => {
      const limit = pLimit(Math.max(1, this.parallel()));
      const read = async (r: ResourceState): Promise<{ step?: Step; kept?: ResourceState }> => {
        if (!r.custom || r.pendingDelete) return { kept: r };
        const host = await provider();
        const found = await host.read(r.urn, r.id, reveal(r.outputs), reveal(r.inputs));
        if (found.id === "") return { step: { op: "delete", urn: r.urn, keys: [] } };
        const outputs = markSecret(found.properties, [
          ...secretKeys(r.outputs),
          ...r.additionalSecretOutputs,
        ]);
        const inputs = found.inputs ? markSecret(found.inputs, secretKeys(r.inputs)) : r.inputs;
        const keys = Object.keys({ ...r.outputs, ...outputs })
          .filter((k) => !sameValues(revealValue(r.outputs[k] ?? null), revealValue(outputs[k] ?? null)))
          .sort();
        return {
          step: { op: keys.length > 0 ? "update" : "same", urn: r.urn, keys },
          kept: { ...r, id: found.id, inputs, outputs },
        };
      };
      // In state order whatever order the reads finish in.
      const settled = await Promise.allSettled(state.resources.map((r) => limit(() => read(r))));
      // A failed read keeps the resource as it was; the others' reads are saved, as Pulumi does.
      const results = settled.map((x, i) =>
        x.status === "fulfilled" ? x.value : { kept: state.resources[i] as ResourceState },
      );
      const steps = results.flatMap((x) => (x.step ? [x.step] : []));
      const kept = results.flatMap((x) => (x.kept ? [x.kept] : []));
      await persist({ ...state, resources: kept });
      const failed = settled.find((x) => x.status === "rejected");
      if (failed) throw failed.reason;
      return steps;
    });
  }

  /**
   * Deletes every resource, dependents first. As in `pulumi destroy`, deletes run in parallel (bounded
   * like --parallel): a resource's delete starts once every resource that depends on it is gone. After
   * a failure no new delete starts; those running finish, and state keeps what was not deleted.
   */
  async destroy(): Promise<RunResult> {
    return this.withProvider("destroy", async (state, provider, persist) => {
      const order = dependencyOrder(state.resources).reverse();
      const gone = new Set<ResourceState>();
      const writes = coalescedWrites(() =>
        persist({ ...state, resources: state.resources.filter((r) => !gone.has(r)) }),
      );
      const failures = await inReverseDependencyOrder(order, this.parallel(), async (r) => {
        await deleteResource(r, provider);
        gone.add(r);
        await writes.write();
      });
      await writes.write();
      if (failures.length > 0) throw failures[0];
      // Reported in dependency order, whatever order the parallel deletes finished in.
      return order
        .filter((r) => gone.has(r) && !r.external && !r.pendingDelete)
        .map((r): Step => ({ op: "delete", urn: r.urn, keys: [] }));
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
    plans: Pick<DeploymentContext, "recordPlan" | "checkPlan" | "replace"> = {},
  ): Promise<RunResult> {
    const operation = dryRun ? "preview" : "up";
    const { state: prior, box, check } = await this.loadState();
    const { log, logs } = this.runLog();
    // The host starts on the program's first resource, once the monitor (which serves the Engine
    // RPCs too) listens: given its address, as the CLI gives its own, a provider's warnings reach
    // this run's log as warnings instead of the host's output.
    let engineAddress: string | undefined;
    const host = this.lazyHost(log, () => engineAddress);
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
    engineAddress = monitor.address;
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

  private lazyHost(
    log: LogSink,
    engineAddress: () => string | undefined = () => undefined,
  ): {
    get: () => Promise<DynamicProviderHost>;
    started: () => boolean;
    close: () => Promise<void>;
  } {
    let started: Promise<DynamicProviderHost> | undefined;
    const get = () => {
      // From the program's directory: the providers' `require`s resolve against the installed package.
      const engine = engineAddress();
      started ??= DynamicProviderHost.start({
        ...(engine === undefined ? {} : { engineAddress: engine }),
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

/**
 * Runs `step` for each resource of `order` (dependents before what they depend on), at most `parallel`
 * at once, each after the steps of the resources earlier in `order` that depend on it. Once a step
 * fails no new one starts; returns the failures.
 */
async function inReverseDependencyOrder(
  order: readonly ResourceState[],
  parallel: number,
  step: (r: ResourceState) => Promise<void>,
): Promise<unknown[]> {
  const limit = pLimit(Math.max(1, parallel));
  const index = new Map(order.map((r, i) => [r, i]));
  const byUrn = new Map<string, ResourceState[]>();
  for (const r of order) byUrn.set(r.urn, [...(byUrn.get(r.urn) ?? []), r]);
  // Only dependents earlier in the order are waited for, so a dependency cycle cannot deadlock.
  const dependents = new Map<ResourceState, ResourceState[]>(order.map((r) => [r, []]));
  for (const r of order) {
    const needs = new Set([...r.dependencies, ...Object.values(r.propertyDependencies).flat(), r.parent]);
    for (const urn of needs) {
      for (const dep of byUrn.get(urn) ?? []) {
        if (dep !== r && (index.get(r) ?? 0) < (index.get(dep) ?? 0)) dependents.get(dep)?.push(r);
      }
    }
  }
  const failures: unknown[] = [];
  const done = new Map<ResourceState, Promise<boolean>>();
  for (const r of order) {
    const after = (dependents.get(r) ?? []).map((d) => done.get(d) ?? Promise.resolve(true));
    done.set(
      r,
      Promise.all(after).then((ok) =>
        ok.every(Boolean) && failures.length === 0
          ? limit(async () => {
              if (failures.length > 0) return false;
              try {
                await step(r);
                return true;
              } catch (error) {
                failures.push(error);
                return false;
              }
            })
          : false,
      ),
    );
  }
  await Promise.all(done.values());
  return failures;
}
