/**
 * One run of a program (preview or update): turns each registration into a step against the prior
 * state — create, update, replace or same — the way Pulumi's step generator does for dynamic resources,
 * then deletes what the program no longer declares. Steps run one at a time, in arrival order.
 */
import { EngineError } from "./errors";
import type { LogSink } from "./log";
import type { DynamicProviderHost } from "./provider-host";
import { dependencyOrder, type ResourceState, type StackState } from "./state";
import { makeUrn, STACK_TYPE } from "./urn";
import { markSecret, type PropertyMap, reveal, sameValues, secretKeys, UNKNOWN } from "./values";

export type StepOp = "same" | "create" | "update" | "replace" | "delete" | "read";
export type OpCounts = Partial<Record<StepOp, number>>;

export interface Step {
  op: StepOp;
  urn: string;
  /** Top-level input keys that changed (update/replace). */
  keys: string[];
}

export interface RegisterRequest {
  type: string;
  name: string;
  parent: string;
  custom: boolean;
  object: PropertyMap;
  dependencies: string[];
  propertyDependencies: Record<string, string[]>;
  /** undefined when the program did not set the option. */
  deleteBeforeReplace: boolean | undefined;
  ignoreChanges: string[];
  replaceOnChanges: string[];
  additionalSecretOutputs: string[];
  protect: boolean;
  retainOnDelete: boolean;
  importId: string;
}

export interface ReadRequest {
  type: string;
  name: string;
  parent: string;
  id: string;
  properties: PropertyMap;
  dependencies: string[];
  additionalSecretOutputs: string[];
}

export interface DeploymentContext {
  project: string;
  stack: string;
  dryRun: boolean;
  prior: StackState;
  provider: () => Promise<DynamicProviderHost>;
  persist: (state: StackState) => Promise<void>;
  log: LogSink;
}

const DYNAMIC_TYPE_PREFIX = "pulumi-nodejs:dynamic";

export class Deployment {
  readonly steps: Step[] = [];
  readonly errors: EngineError[] = [];
  private readonly registered: ResourceState[] = [];
  /** Prior resources not (yet) registered in this run. */
  private remainingOld: ResourceState[];
  private pendingDeletes: ResourceState[];
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly ctx: DeploymentContext) {
    this.remainingOld = ctx.prior.resources.filter((r) => !r.pendingDelete);
    // Pending deletes left by an interrupted run are finished by this one.
    this.pendingDeletes = ctx.prior.resources.filter((r) => r.pendingDelete);
  }

  register(
    req: RegisterRequest,
  ): Promise<{ urn: string; id: string; outputs: PropertyMap; stable: boolean }> {
    return this.exclusive(async () => {
      const urn = makeUrn(this.ctx.stack, this.ctx.project, req.type, req.name, req.parent);
      if (this.registered.some((r) => r.urn === urn)) {
        throw new EngineError(
          "DUPLICATE_URN",
          "register",
          "a resource with this URN was already registered",
          urn,
        );
      }
      const old = this.remainingOld.find((r) => r.urn === urn && !r.external);
      // If the step fails, `old` stays in state untouched.
      const entry = req.custom ? await this.stepCustom(req, urn, old) : this.stepComponent(req, urn, old);
      this.remainingOld = this.remainingOld.filter((r) => r.urn !== urn);
      this.registered.push(entry);
      await this.persist();
      return { urn, id: entry.id, outputs: entry.outputs, stable: this.steps.at(-1)?.op === "same" };
    });
  }

  registerOutputs(urn: string, outputs: PropertyMap): Promise<void> {
    return this.exclusive(async () => {
      const entry = this.registered.find((r) => r.urn === urn);
      if (!entry) throw new EngineError("UNKNOWN_URN", "registerOutputs", "resource was not registered", urn);
      entry.outputs = outputs;
      await this.persist();
    });
  }

  /** Resource.get: read an existing resource by id and track it as external (never deleted). */
  read(req: ReadRequest): Promise<{ urn: string; outputs: PropertyMap }> {
    return this.exclusive(async () => {
      const urn = makeUrn(this.ctx.stack, this.ctx.project, req.type, req.name, req.parent);
      this.requireDynamic(req.type, urn);
      // In a preview the id may come from a resource not created yet: the read is skipped, outputs unknown.
      if (req.id === UNKNOWN) return { urn, outputs: {} };
      const host = await this.ctx.provider();
      const result = await host.read(urn, req.id, reveal(req.properties), {});
      if (result.id === "") {
        throw new EngineError("NOT_FOUND", "read", `resource ${req.id} does not exist`, urn, "id");
      }
      const outputs = markSecret(result.properties, [
        ...secretKeys(req.properties),
        ...req.additionalSecretOutputs,
      ]);
      this.remainingOld = this.remainingOld.filter((r) => r.urn !== urn);
      this.registered.push({
        ...baseEntry(urn, req.type, req.parent),
        custom: true,
        id: result.id,
        inputs: result.inputs ?? {},
        outputs,
        dependencies: req.dependencies,
        additionalSecretOutputs: req.additionalSecretOutputs,
        external: true,
      });
      this.steps.push({ op: "read", urn, keys: [] });
      await this.persist();
      return { urn, outputs };
    });
  }

  /** After the program exits successfully: delete what it no longer declares and the replaced halves. */
  finish(): Promise<void> {
    return this.exclusive(async () => {
      const doomed = dependencyOrder([...this.remainingOld, ...this.pendingDeletes]).reverse();
      for (const r of doomed) {
        const orphan = this.remainingOld.includes(r);
        if (orphan && !r.external) this.steps.push({ op: "delete", urn: r.urn, keys: [] });
        if (this.ctx.dryRun) continue;
        if (!r.external) await deleteResource(r, this.ctx.provider);
        this.remainingOld = this.remainingOld.filter((x) => x !== r);
        this.pendingDeletes = this.pendingDeletes.filter((x) => x !== r);
        await this.persist();
      }
    });
  }

  /** The state as of now: what this run registered, prior resources it has not reached, pending deletes. */
  snapshot(): StackState {
    return {
      project: this.ctx.project,
      stack: this.ctx.stack,
      resources: [...this.registered, ...this.remainingOld, ...this.pendingDeletes],
    };
  }

  /** Resolves once every step received so far has finished (SignalAndWaitForShutdown). */
  idle(): Promise<void> {
    return this.queue.then(() => undefined);
  }

  stackOutputs(): PropertyMap {
    return this.registered.find((r) => r.type === STACK_TYPE)?.outputs ?? {};
  }

  counts(): OpCounts {
    return countSteps(this.steps);
  }

  private stepComponent(req: RegisterRequest, urn: string, old: ResourceState | undefined): ResourceState {
    this.steps.push({ op: old ? "same" : "create", urn, keys: [] });
    return {
      ...baseEntry(urn, req.type, req.parent),
      inputs: req.object,
      // Components get their outputs from RegisterResourceOutputs; keep the last ones until then.
      outputs: old?.outputs ?? {},
      dependencies: req.dependencies,
      propertyDependencies: req.propertyDependencies,
      protect: req.protect,
    };
  }

  private async stepCustom(
    req: RegisterRequest,
    urn: string,
    old: ResourceState | undefined,
  ): Promise<ResourceState> {
    this.requireDynamic(req.type, urn);
    if (req.importId !== "") {
      throw new EngineError(
        "IMPORT_NOT_SUPPORTED",
        "register",
        "dynamic resources cannot be imported (pulumi#3550); use the resource's adoption input instead",
        urn,
        "import",
      );
    }
    const host = await this.ctx.provider();
    const secretInputs = secretKeys(req.object);
    const goal = withIgnoredChanges(req.object, old, req.ignoreChanges);
    const check = async (olds: PropertyMap) => {
      const result = await host.check(urn, olds, reveal(goal));
      if (result.failures.length > 0) {
        const failures = result.failures.map((f) => `${f.property}: ${f.reason}`);
        throw new EngineError("CHECK_FAILED", "check", failures.join("; "), urn);
      }
      return markSecret(result.inputs, secretInputs);
    };
    let inputs = await check(old ? reveal(old.inputs) : {});
    let op: StepOp = "create";
    let keys: string[] = [];
    let deleteBeforeReplace = false;
    if (old) {
      const diff = await host.diff(urn, old.id, reveal(old.outputs), reveal(inputs), reveal(old.inputs));
      keys = changedKeys(old.inputs, inputs);
      const changed = diff.changes === "some" || (diff.changes === "unknown" && keys.length > 0);
      const replaceKeys = [
        ...diff.replaces,
        ...req.replaceOnChanges.filter((k) => (k === "*" ? keys.length > 0 : keys.includes(k))),
      ];
      op = !changed ? "same" : replaceKeys.length > 0 ? "replace" : "update";
      if (op === "replace") {
        keys = replaceKeys;
        deleteBeforeReplace = diff.deleteBeforeReplace || req.deleteBeforeReplace === true;
        // A replacement is a new resource: re-check without olds so defaults such as auto-names are regenerated.
        inputs = await check({});
      }
    }
    this.steps.push({ op, urn, keys });
    const secretOutputs = [...secretInputs, ...req.additionalSecretOutputs];
    const entry: ResourceState = {
      ...baseEntry(urn, req.type, req.parent),
      custom: true,
      inputs,
      dependencies: req.dependencies,
      propertyDependencies: req.propertyDependencies,
      additionalSecretOutputs: req.additionalSecretOutputs,
      deleteBeforeReplace: req.deleteBeforeReplace ?? false,
      protect: req.protect,
      retainOnDelete: req.retainOnDelete,
    };
    if (op === "same" && old)
      return { ...entry, id: old.id, outputs: markSecret(old.outputs, secretOutputs) };
    if (this.ctx.dryRun) {
      // Preview: no provider writes; outputs the provider would compute stay unknown in the program.
      return { ...entry, id: op === "update" && old ? old.id : "", outputs: inputs };
    }
    if (op === "update" && old) {
      const res = await host.update(urn, old.id, reveal(old.outputs), reveal(inputs), reveal(old.inputs));
      return { ...entry, id: old.id, outputs: markSecret(res.properties, secretOutputs) };
    }
    if (op === "replace" && old && deleteBeforeReplace) {
      await deleteResource(old, this.ctx.provider);
      this.remainingOld = this.remainingOld.filter((r) => r !== old);
      await this.persist();
    }
    const created = await host.create(urn, reveal(inputs));
    if (created.id === "")
      throw new EngineError("EMPTY_ID", "create", "provider returned an empty id", urn, "id");
    // Create-before-delete: the old half is deleted once the whole program has run.
    if (op === "replace" && old && !deleteBeforeReplace)
      this.pendingDeletes.push({ ...old, pendingDelete: true });
    return { ...entry, id: created.id, outputs: markSecret(created.properties, secretOutputs) };
  }

  private requireDynamic(type: string, urn: string): void {
    if (!type.startsWith(DYNAMIC_TYPE_PREFIX)) {
      throw new EngineError(
        "UNSUPPORTED_RESOURCE",
        "register",
        `the test engine only runs dynamic resources (${DYNAMIC_TYPE_PREFIX}*), not ${type}`,
        urn,
      );
    }
  }

  private persist(): Promise<void> {
    return this.ctx.dryRun ? Promise.resolve() : this.ctx.persist(this.snapshot());
  }

  /** Runs one step at a time; a failed step is recorded and reported to the program, later steps still run. */
  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn);
    this.queue = run.catch((error: unknown) => {
      if (error instanceof EngineError) this.errors.push(error);
      else this.errors.push(new EngineError("STEP_FAILED", "step", String(error)));
      this.ctx.log({ source: "engine", severity: "error", message: String(error) });
    });
    return run;
  }
}

export async function deleteResource(
  r: ResourceState,
  provider: () => Promise<DynamicProviderHost>,
): Promise<void> {
  if (r.protect) {
    throw new EngineError("PROTECTED", "delete", "resource is protected; remove `protect` first", r.urn);
  }
  if (!r.custom || r.external || r.retainOnDelete) return;
  const host = await provider();
  await host.delete(r.urn, r.id, reveal(r.outputs), reveal(r.inputs));
}

export function countSteps(steps: readonly Step[]): OpCounts {
  const counts: OpCounts = {};
  for (const step of steps) counts[step.op] = (counts[step.op] ?? 0) + 1;
  return counts;
}

/** A state entry with every flag off and nothing recorded yet. */
export function baseEntry(urn: string, type: string, parent: string): ResourceState {
  return {
    urn,
    type,
    custom: false,
    id: "",
    parent,
    inputs: {},
    outputs: {},
    dependencies: [],
    propertyDependencies: {},
    additionalSecretOutputs: [],
    deleteBeforeReplace: false,
    protect: false,
    retainOnDelete: false,
    external: false,
    pendingDelete: false,
  };
}

/** ignoreChanges on top-level keys: keep the old input value (or its absence). */
function withIgnoredChanges(
  news: PropertyMap,
  old: ResourceState | undefined,
  ignore: string[],
): PropertyMap {
  if (!old || ignore.length === 0) return news;
  const goal = { ...news };
  for (const key of ignore) {
    const previous = old.inputs[key];
    if (previous === undefined) delete goal[key];
    else goal[key] = previous;
  }
  return goal;
}

function changedKeys(olds: PropertyMap, news: PropertyMap): string[] {
  const keys = new Set([...Object.keys(olds), ...Object.keys(news)]);
  const a = reveal(olds);
  const b = reveal(news);
  return [...keys].filter((k) => !sameValues(a[k] ?? null, b[k] ?? null) || k in a !== k in b).sort();
}
