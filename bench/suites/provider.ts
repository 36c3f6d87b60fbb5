/**
 * 3. The provider's API economy: a program of 50 endpoints with their templates, deployed through the
 * test engine from the packed package (as users get it) to the bench service, which counts every
 * answered request by route at the service. Per cycle: create (up), no-op up, update (every resource
 * changes in place), refresh, delete (destroy); wall time of each, and API calls per resource per
 * operation, split into writes and reads.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { LocalStack, type OpCounts } from "../../engine/engine";
import { installProgram, packProject } from "../../engine/package";
import { BENCH_DIR } from "../lib/build";
import { type Figure, figure } from "../lib/figures";
import { descendantsCpuMs } from "../lib/proc-cpu";
import type { CallCount } from "../lib/protocol";
import { BENCH_API_KEY, type BenchService, startService, tempDataDir } from "../lib/servers";

export const OPERATIONS = ["create", "noopUpdate", "update", "refresh", "delete"] as const;
export type Operation = (typeof OPERATIONS)[number];
type ResourceKind = "template" | "endpoint";

/** Calls per resource of one kind in one operation. */
export interface PerResource {
  writes: number;
  reads: number;
}

export interface OperationResult {
  wallMs: Figure;
  /** The engine's step counts (create, update, same, delete), from the last cycle. */
  steps: OpCounts;
  perResource: Record<ResourceKind, PerResource>;
  /** Every route the operation called, with its count (last cycle). */
  calls: CallCount[];
  /** Total API calls of the operation in each cycle (the same in every cycle when deterministic). */
  totalCallsPerCycle: number[];
}

export interface ProviderResult {
  endpoints: number;
  templates: number;
  cycles: number;
  operations: Record<Operation, OperationResult>;
  /** Time to pack the package and install it into the program (cached by content), ms. */
  prepareMs: number;
}

/** Which resource a counted route belongs to: templates are REST, endpoints GraphQL (provider/clients.ts). */
function kindOf(key: string): ResourceKind | null {
  if (key.includes("/templates")) return "template";
  if (/GRAPHQL .*(saveEndpoint|deleteEndpoint|myself\.endpoint\b|myself\.endpoints)/.test(key))
    return "endpoint";
  return null;
}

function perResource(calls: CallCount[], count: number): Record<ResourceKind, PerResource> {
  const out: Record<ResourceKind, PerResource> = {
    template: { writes: 0, reads: 0 },
    endpoint: { writes: 0, reads: 0 },
  };
  for (const call of calls) {
    const kind = kindOf(call.key);
    if (!kind) continue;
    if (call.kind === "write") out[kind].writes += call.count / count;
    else out[kind].reads += call.count / count;
  }
  return out;
}

/** One operation of one cycle, as measured. */
interface OpMeasure {
  ms: number;
  /** CPU of the test engine (this process) during the operation, ms. */
  engineCpuMs: number;
  /** CPU of the program and the provider host (this process's descendants but the service), ms. */
  programCpuMs: number;
  steps: OpCounts;
  calls: CallCount[];
  total: number;
}

/** Packs the package and installs it into the bench program (cached by content). */
export async function prepareProgram(log: (line: string) => void): Promise<{ dir: string; ms: number }> {
  const prepared = performance.now();
  const pkg = await packProject();
  const program = await installProgram(join(BENCH_DIR, "programs", "fifty-endpoints"), pkg);
  const ms = performance.now() - prepared;
  log(`  package packed and installed in ${ms.toFixed(0)} ms`);
  return { dir: program.dir, ms };
}

/**
 * One cycle on a fresh service and stack: `count` endpoints with their templates (2 x count
 * resources) through the listed operations in order ("update" raises `generation` first).
 */
async function stackCycle(
  programDir: string,
  count: number,
  operations: readonly Operation[],
  log: (line: string) => void,
): Promise<Partial<Record<Operation, OpMeasure>>> {
  const data = await tempDataDir();
  const workDir = await mkdtemp(join(tmpdir(), "runpodkit-bench-stack-"));
  const svc: BenchService = await startService({ data: data.file, countCalls: true });
  const out: Partial<Record<Operation, OpMeasure>> = {};
  try {
    const stack = await LocalStack.open({
      programDir,
      stackName: "bench",
      stateDir: join(workDir, "state"),
      passphrase: randomBytes(16).toString("hex"),
    });
    stack.setAllConfig({
      "runpodkit:apiKey": { value: BENCH_API_KEY, secret: true },
      "runpodkit:restUrl": { value: svc.ready.restUrl },
      "runpodkit:graphqlUrl": { value: svc.ready.graphqlUrl },
      "runpodkit:queueUrl": { value: svc.ready.queueUrl },
      count: { value: String(count) },
      generation: { value: "1" },
    });
    const cpu = () => descendantsCpuMs(process.pid, [svc.ready.pid]);
    const run = (operation: Operation) => {
      if (operation === "create" || operation === "noopUpdate") return stack.up();
      if (operation === "update") {
        stack.setConfig("generation", { value: "2" });
        return stack.up();
      }
      return operation === "refresh" ? stack.refresh() : stack.destroy();
    };
    for (const operation of operations) {
      await svc.resetCalls();
      const cpuBefore = cpu();
      const started = performance.now();
      const { changes } = await run(operation);
      const ms = performance.now() - started;
      const cpuAfter = cpu();
      const { calls } = await svc.stats();
      const total = calls.reduce((n, c) => n + c.count, 0);
      const engineCpuMs = cpuBefore && cpuAfter ? cpuAfter.rootMs - cpuBefore.rootMs : Number.NaN;
      const programCpuMs =
        cpuBefore && cpuAfter ? cpuAfter.descendantsMs - cpuBefore.descendantsMs : Number.NaN;
      out[operation] = {
        ms,
        engineCpuMs,
        programCpuMs,
        steps: changes,
        calls: calls.sort((a, b) => a.key.localeCompare(b.key)),
        total,
      };
      log(
        `  ${2 * count} resources, ${operation}: ${ms.toFixed(0)} ms, CPU engine ${engineCpuMs.toFixed(0)} + program/provider ${programCpuMs.toFixed(0)} ms, ${total} API calls, steps ${JSON.stringify(changes)}`,
      );
    }
  } finally {
    await svc.close();
    await data.remove();
    await rm(workDir, { recursive: true, force: true });
  }
  return out;
}

export async function providerEconomy(options: {
  cycles: number;
  count: number;
  log: (line: string) => void;
}): Promise<ProviderResult> {
  const program = await prepareProgram(options.log);
  const measures: Partial<Record<Operation, OpMeasure>>[] = [];
  for (let cycle = 0; cycle < options.cycles; cycle++)
    measures.push(await stackCycle(program.dir, options.count, OPERATIONS, options.log));
  const operations = {} as Record<Operation, OperationResult>;
  for (const operation of OPERATIONS) {
    const runs = measures.map((m) => m[operation] as OpMeasure);
    const last = runs.at(-1) as OpMeasure;
    operations[operation] = {
      wallMs: figure(
        runs.map((r) => r.ms),
        "ms",
        0,
      ),
      steps: last.steps,
      perResource: perResource(last.calls, options.count),
      calls: last.calls,
      totalCallsPerCycle: runs.map((r) => r.total),
    };
  }
  return {
    endpoints: options.count,
    templates: options.count,
    cycles: options.cycles,
    operations,
    prepareMs: Math.round(program.ms),
  };
}

/** The operations of the stack-size curve (the in-place update is the provider suite's). */
export const CURVE_OPERATIONS = ["create", "noopUpdate", "refresh", "delete"] as const;
export type CurveOperation = (typeof CURVE_OPERATIONS)[number];

export interface StackSizeOperation {
  wallMs: Figure;
  /** The engine's CPU (this process) plus the program's and provider host's, ms. */
  providerCpuMs: Figure;
  engineCpuMs: Figure;
  programCpuMs: Figure;
  /** Per resource: wall time and provider-side CPU, ms. */
  wallMsPerResource: Figure;
  providerCpuMsPerResource: Figure;
  /** API calls counted at the service, per cycle. */
  totalCallsPerCycle: number[];
  steps: OpCounts;
}

export interface StackSizePoint {
  /** Resources in the stack (templates + endpoints). */
  resources: number;
  operations: Record<CurveOperation, StackSizeOperation>;
}

export interface StackSizeCurve {
  cycles: number;
  points: StackSizePoint[];
}

/**
 * up, no-op up, refresh and destroy of stacks of `sizes` resources (half endpoints, half templates),
 * `cycles` fresh cycles each: wall time, provider-side CPU (engine, program and provider host; the
 * service's is not counted) and API calls counted at the service.
 */
export async function stackSizeCurve(options: {
  sizes: number[];
  cycles: number;
  log: (line: string) => void;
}): Promise<StackSizeCurve> {
  const program = await prepareProgram(options.log);
  const points: StackSizePoint[] = [];
  for (const resources of options.sizes) {
    const count = Math.max(1, Math.round(resources / 2));
    const measures: Partial<Record<Operation, OpMeasure>>[] = [];
    for (let cycle = 0; cycle < options.cycles; cycle++)
      measures.push(await stackCycle(program.dir, count, CURVE_OPERATIONS, options.log));
    const operations = {} as Record<CurveOperation, StackSizeOperation>;
    for (const operation of CURVE_OPERATIONS) {
      const runs = measures.map((m) => m[operation] as OpMeasure);
      const provider = runs.map((r) => r.engineCpuMs + r.programCpuMs);
      operations[operation] = {
        wallMs: figure(
          runs.map((r) => r.ms),
          "ms",
          0,
        ),
        providerCpuMs: figure(provider, "ms", 0),
        engineCpuMs: figure(
          runs.map((r) => r.engineCpuMs),
          "ms",
          0,
        ),
        programCpuMs: figure(
          runs.map((r) => r.programCpuMs),
          "ms",
          0,
        ),
        wallMsPerResource: figure(
          runs.map((r) => r.ms / (2 * count)),
          "ms/resource",
          2,
        ),
        providerCpuMsPerResource: figure(
          provider.map((ms) => ms / (2 * count)),
          "ms/resource",
          2,
        ),
        totalCallsPerCycle: runs.map((r) => r.total),
        steps: (runs.at(-1) as OpMeasure).steps,
      };
    }
    points.push({ resources: 2 * count, operations });
  }
  return { cycles: options.cycles, points };
}
