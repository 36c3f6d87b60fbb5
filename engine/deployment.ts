/**
 * One run of a program (preview or update): turns each registration into a step against the prior
 * state — create, update, replace or same — the way Pulumi's step generator does for dynamic resources,
 * then deletes what the program no longer declares. As in Pulumi's engine, steps are generated one
 * registration at a time (check, diff, dependent replacements) and executed in parallel, bounded like
 * the CLI's `--parallel`. engine/README.md lists the rules modelled and the tests that show them.
 */
import pLimit from "p-limit";
import { EngineError } from "./errors";
import type { LogSink } from "./log";
import { type PlanChecker, type PlanRecorder, planInputs, type StepOp } from "./plan";
import { resetPath } from "./property-path";
import type { DynamicProviderHost } from "./provider-host";
import { coalescedWrites, dependencyOrder, type ResourceState, type StackState } from "./state";
import { type CustomTimeouts, timeoutSeconds } from "./timeouts";
import { makeUrn, STACK_TYPE } from "./urn";
import { markSecret, type PropertyMap, reveal, sameValues, secretKeys, UNKNOWN } from "./values";

export type { StepOp };
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
  /** URNs the resource had before (the `aliases` option, resolved by the SDK). */
  aliases: string[];
  replaceOnChanges: string[];
  additionalSecretOutputs: string[];
  protect: boolean;
  retainOnDelete: boolean;
  importId: string;
  customTimeouts: CustomTimeouts;
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
  /** Resource operations run at once, like `pulumi up --parallel`. */
  parallel: number;
  /** `preview --save-plan`: record what each step intends. */
  recordPlan?: PlanRecorder;
  /** `up --plan`: refuse a step the saved plan does not allow. */
  checkPlan?: PlanChecker;
  /** `--replace <urn>`: these resources are replaced whatever their inputs. */
  replace?: ReadonlySet<string>;
}

/** What the generator decided for one registration; executed later, in parallel with others. */
interface GeneratedStep {
  req: RegisterRequest;
  urn: string;
  op: StepOp;
  old: ResourceState | undefined;
  entry: ResourceState;
  secretOutputs: string[];
  deleteBeforeReplace: boolean;
  /** Delete-before-replace: dependents that must go first, in dependency order. */
  dependents: ResourceState[];
  /** Already deleted by an earlier delete-before-replace of a resource it depends on. */
  condemned: boolean;
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
  private readonly seen = new Set<string>();
  private readonly running = new Set<Promise<unknown>>();
  private readonly limit: ReturnType<typeof pLimit>;
  /** State writes, coalesced while one waits for its turn (state.ts `coalescedWrites`). */
  private readonly writes = coalescedWrites(() => this.ctx.persist(this.snapshot()));
  /** Dependents deleted ahead of a delete-before-replace, by URN: they come back as replacements. */
  private readonly condemned = new Map<string, { state: ResourceState; keys: string[] }>();
  private canceled = false;
  /** The prior state each registration took over, by its new URN (its own, or an alias's). */
  private readonly aliased = new Map<string, ResourceState>();

  constructor(private readonly ctx: DeploymentContext) {
    this.remainingOld = ctx.prior.resources.filter((r) => !r.pendingDelete);
    // Pending deletes left by an interrupted run are finished by this one.
    this.pendingDeletes = ctx.prior.resources.filter((r) => r.pendingDelete);
    this.limit = pLimit(Math.max(1, ctx.parallel));
  }

  /** Like Ctrl-C in the CLI: no new step starts; steps already running finish. */
  cancel(): void {
    this.canceled = true;
  }

  register(
    req: RegisterRequest,
  ): Promise<{ urn: string; id: string; outputs: PropertyMap; stable: boolean }> {
    const urn = makeUrn(this.ctx.stack, this.ctx.project, req.type, req.name, req.parent);
    type Generated =
      | { kind: "component"; entry: ResourceState; stable: boolean }
      | { kind: "custom"; step: GeneratedStep; stable: boolean };
    const generated = this.exclusive(async (): Promise<Generated> => {
      if (this.seen.has(urn)) {
        throw new EngineError(
          "DUPLICATE_URN",
          "register",
          "a resource with this URN was already registered",
          urn,
        );
      }
      this.seen.add(urn);
      this.refuseIfCanceled(urn);
      const condemned = this.condemned.get(urn);
      // Under its URN, else under one it had (aliases: a rename or a new parent is the same resource).
      const old =
        condemned?.state ??
        this.remainingOld.find((r) => r.urn === urn && !r.external) ??
        this.remainingOld.find((r) => req.aliases.includes(r.urn) && !r.external);
      if (old !== undefined) this.aliased.set(urn, old);
      if (!req.custom) {
        return { kind: "component", entry: this.stepComponent(req, urn, old), stable: old !== undefined };
      }
      const step = await this.generateCustom(req, urn, old, condemned?.keys);
      return { kind: "custom", step, stable: step.op === "same" };
    });
    const done = generated.then(async (g) => {
      // If the step fails, `old` stays in state untouched.
      const entry = g.kind === "custom" ? await this.limit(() => this.executeCustom(g.step)) : g.entry;
      const before = this.aliased.get(urn);
      this.remainingOld = this.remainingOld.filter((r) => r.urn !== urn && r !== before);
      this.registered.push(entry);
      await this.persist();
      return { urn, id: entry.id, outputs: entry.outputs, stable: g.stable };
    });
    return this.track(done);
  }

  registerOutputs(urn: string, outputs: PropertyMap): Promise<void> {
    return this.serial(async () => {
      const entry = this.registered.find((r) => r.urn === urn);
      if (!entry) throw new EngineError("UNKNOWN_URN", "registerOutputs", "resource was not registered", urn);
      entry.outputs = outputs;
      await this.persist();
    });
  }

  /** Resource.get: read an existing resource by id and track it as external (never deleted). */
  read(req: ReadRequest): Promise<{ urn: string; outputs: PropertyMap }> {
    return this.serial(async () => {
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
    return this.serial(async () => {
      const doomed = dependencyOrder([...this.remainingOld, ...this.pendingDeletes]).reverse();
      for (const r of doomed) {
        const orphan = this.remainingOld.includes(r);
        if (orphan && !r.external) {
          this.steps.push({ op: "delete", urn: r.urn, keys: [] });
          this.ctx.recordPlan?.(r.urn, "delete", {});
          this.ctx.checkPlan?.(r.urn, "delete", {});
        }
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
  async idle(): Promise<void> {
    await this.queue;
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
    await this.writes.settled();
  }

  stackOutputs(): PropertyMap {
    return this.registered.find((r) => r.type === STACK_TYPE)?.outputs ?? {};
  }

  counts(): OpCounts {
    return countSteps(this.steps);
  }

  private stepComponent(req: RegisterRequest, urn: string, old: ResourceState | undefined): ResourceState {
    this.steps.push({ op: old ? "same" : "create", urn, keys: [] });
    this.ctx.recordPlan?.(urn, old ? "same" : "create", {});
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

  /** Step generation (serial, as in Pulumi's step generator): check, diff, and what a replacement drags along. */
  private async generateCustom(
    req: RegisterRequest,
    urn: string,
    old: ResourceState | undefined,
    condemnedKeys: string[] | undefined,
  ): Promise<GeneratedStep> {
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
    const goal = withIgnoredChanges(req.object, old, req.ignoreChanges, urn);
    const check = async (olds: PropertyMap, news: PropertyMap = goal) => {
      const result = await host.check(urn, olds, reveal(news));
      if (result.failures.length > 0) {
        // A reason that already starts with its property (runpodkit's do) is not prefixed twice.
        const failures = result.failures.map((f) =>
          f.reason.startsWith(`${f.property}:`) || f.reason.startsWith(`${f.property} `)
            ? f.reason
            : `${f.property}: ${f.reason}`,
        );
        throw new EngineError("CHECK_FAILED", "check", failures.join("; "), urn);
      }
      return markSecret(result.inputs, secretInputs);
    };
    let inputs: PropertyMap;
    let op: StepOp = "create";
    let keys: string[] = [];
    let deleteBeforeReplace = false;
    let dependents: ResourceState[] = [];
    // `--replace`: Pulumi's step generator checks with no olds and asks the provider no diff; the
    // diff "blames the id" (pkg/resource/deploy/step_generator.go, isTargetedReplace).
    const targeted = old !== undefined && !condemnedKeys && (this.ctx.replace?.has(urn) ?? false);
    if (old && condemnedKeys) {
      // Deleted ahead of a resource it depends on: it comes back as a new resource.
      op = "replace";
      keys = condemnedKeys;
      inputs = await check({});
    } else if (old && targeted) {
      op = "replace";
      keys = ["id"];
      inputs = await check({});
      deleteBeforeReplace = req.deleteBeforeReplace ?? false;
      if (deleteBeforeReplace) dependents = await this.dependentReplacements(old);
    } else {
      inputs = await check(old ? reveal(old.inputs) : {});
    }
    if (old && !condemnedKeys && !targeted) {
      const diff = await host.diff(urn, old.id, reveal(old.outputs), reveal(inputs), reveal(old.inputs));
      keys = changedKeys(old.inputs, inputs);
      const changed = diff.changes === "some" || (diff.changes === "unknown" && keys.length > 0);
      // Pulumi's applyReplaceOnChanges looks only at the keys the provider's diff names as changed;
      // only for a provider answering "unknown" does the engine diff the inputs itself and name them
      // (step_generator.go, diffResource). Pulumi's dynamic-provider host names none.
      const named = diff.changes === "unknown" ? keys : (diff.diffs ?? []);
      const replaceKeys = [
        ...diff.replaces,
        ...req.replaceOnChanges.filter((k) => (k === "*" ? named.length > 0 : named.includes(k))),
      ];
      op = !changed ? "same" : replaceKeys.length > 0 ? "replace" : "update";
      if (op === "replace") {
        keys = replaceKeys;
        // The program's option wins over the provider's answer, either way.
        deleteBeforeReplace = req.deleteBeforeReplace ?? diff.deleteBeforeReplace;
        // A replacement is a new resource: re-check without olds so defaults such as auto-names are
        // regenerated, and with the program's own inputs (Pulumi's goal.Properties), not those
        // ignoreChanges carried over from the old resource (step_generator.go).
        inputs = await check({}, req.object);
        if (deleteBeforeReplace) dependents = await this.dependentReplacements(old);
      }
    }
    this.steps.push({ op, urn, keys });
    this.ctx.recordPlan?.(urn, op, planInputs(inputs));
    this.ctx.checkPlan?.(urn, op, inputs);
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
      customTimeouts: req.customTimeouts,
    };
    return {
      req,
      urn,
      op,
      old,
      entry,
      secretOutputs,
      deleteBeforeReplace,
      dependents,
      condemned: condemnedKeys !== undefined,
    };
  }

  /**
   * Pulumi's calculateDependentReplacements: of the resources that (transitively) depend on one being
   * deleted before its replacement, those whose provider answers "replace" when the inputs fed by a
   * condemned resource become unknown must be deleted first. Walks the prior state in dependency order,
   * skipping resources this run has already registered (they cannot depend on the root).
   */
  private async dependentReplacements(root: ResourceState): Promise<ResourceState[]> {
    const replaceSet = new Set([root.urn]);
    const dependents: ResourceState[] = [];
    const candidates = dependencyOrder(this.remainingOld).filter(
      (r) => r.urn !== root.urn && !this.seen.has(r.urn),
    );
    const host = await this.ctx.provider();
    for (const r of candidates) {
      if (!r.custom || r.external) continue;
      const fedBy = Object.entries(r.propertyDependencies).filter(([, urns]) =>
        urns.some((u) => replaceSet.has(u)),
      );
      // A dependsOn edge alone changes no input: such a dependent is never replaced.
      if (fedBy.length === 0) continue;
      const inputsForDiff: PropertyMap = { ...reveal(r.inputs) };
      for (const [key] of fedBy) if (key in inputsForDiff) inputsForDiff[key] = UNKNOWN;
      const diff = await host.diff(r.urn, r.id, reveal(r.outputs), inputsForDiff, reveal(r.inputs));
      if (diff.replaces.length === 0) continue;
      if (r.protect) {
        throw new EngineError(
          "PROTECTED",
          "replace",
          `unable to replace ${r.urn} as part of replacing ${root.urn}: it is protected; remove \`protect\` first`,
          r.urn,
        );
      }
      replaceSet.add(r.urn);
      dependents.push(r);
      this.condemned.set(r.urn, { state: r, keys: diff.replaces });
    }
    return dependents;
  }

  /** Step execution (parallel, bounded): the provider writes the generator decided on. */
  private async executeCustom(step: GeneratedStep): Promise<ResourceState> {
    const { op, old, entry, secretOutputs, urn } = step;
    if (op !== "same") this.refuseIfCanceled(urn);
    if (op === "same" && old)
      return { ...entry, id: old.id, outputs: markSecret(old.outputs, secretOutputs) };
    if (this.ctx.dryRun) {
      // Preview: no provider writes; outputs the provider would compute stay unknown in the program.
      return { ...entry, id: op === "update" && old ? old.id : "", outputs: entry.inputs };
    }
    const host = await this.ctx.provider();
    const timeouts = step.req.customTimeouts;
    if (op === "update" && old) {
      const res = await host.update(
        urn,
        old.id,
        reveal(old.outputs),
        reveal(entry.inputs),
        reveal(old.inputs),
        timeoutSeconds(timeouts.update),
      );
      return { ...entry, id: old.id, outputs: markSecret(res.properties, secretOutputs) };
    }
    if (op === "replace" && old && step.deleteBeforeReplace) {
      // Dependents first (reverse dependency order), then the resource itself.
      for (const d of [...step.dependents].reverse()) {
        await deleteResource(d, this.ctx.provider);
        this.remainingOld = this.remainingOld.filter((r) => r !== d);
        await this.persist();
      }
      await deleteResource(old, this.ctx.provider);
      this.remainingOld = this.remainingOld.filter((r) => r !== old);
      await this.persist();
    }
    const created = await host.create(urn, reveal(entry.inputs), timeoutSeconds(timeouts.create));
    if (created.id === "")
      throw new EngineError("EMPTY_ID", "create", "provider returned an empty id", urn, "id");
    // Create-before-delete: the old half is deleted once the whole program has run.
    if (op === "replace" && old && !step.deleteBeforeReplace && !step.condemned)
      this.pendingDeletes.push({ ...old, pendingDelete: true });
    return { ...entry, id: created.id, outputs: markSecret(created.properties, secretOutputs) };
  }

  private refuseIfCanceled(urn: string): void {
    if (this.canceled) throw new EngineError("CANCELED", "register", "the update was canceled", urn);
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
    return this.ctx.dryRun ? Promise.resolve() : this.writes.write();
  }

  /** One step at a time, its failure recorded. */
  private serial<T>(fn: () => Promise<T>): Promise<T> {
    return this.track(this.exclusive(fn));
  }

  /** Generates one step at a time. */
  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn);
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** A failed step is recorded and reported to the program; other steps still run. */
  private track<T>(run: Promise<T>): Promise<T> {
    const settled = run.then(
      () => undefined,
      (error: unknown) => {
        if (error instanceof EngineError) this.errors.push(error);
        else this.errors.push(new EngineError("STEP_FAILED", "step", String(error)));
        this.ctx.log({ source: "engine", severity: "error", message: String(error) });
      },
    );
    this.running.add(settled);
    void settled.finally(() => this.running.delete(settled));
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
  await host.delete(
    r.urn,
    r.id,
    reveal(r.outputs),
    reveal(r.inputs),
    timeoutSeconds(r.customTimeouts?.delete),
  );
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

/**
 * ignoreChanges: keep the old input value (or its absence) at each path, a top-level key or a nested
 * one (`env.TOKEN`), as Pulumi's processIgnoreChanges does; a path whose container the new inputs
 * lack fails the registration with Pulumi's message.
 */
function withIgnoredChanges(
  news: PropertyMap,
  old: ResourceState | undefined,
  ignore: string[],
  urn: string,
): PropertyMap {
  if (!old || ignore.length === 0) return news;
  let goal = { ...news };
  const missing: string[] = [];
  for (const path of ignore) {
    const reset = resetPath(path, old.inputs, goal);
    if (reset === undefined) missing.push(path);
    else goal = reset;
  }
  if (missing.length > 0) {
    throw new EngineError(
      "IGNORE_CHANGES",
      "register",
      `cannot ignore changes to the following properties because one or more elements of the path are missing: ${JSON.stringify(missing.join(", "))}`,
      urn,
      "ignoreChanges",
    );
  }
  return goal;
}

function changedKeys(olds: PropertyMap, news: PropertyMap): string[] {
  const keys = new Set([...Object.keys(olds), ...Object.keys(news)]);
  const a = reveal(olds);
  const b = reveal(news);
  return [...keys].filter((k) => !sameValues(a[k] ?? null, b[k] ?? null) || k in a !== k in b).sort();
}
