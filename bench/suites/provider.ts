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

export async function providerEconomy(options: {
  cycles: number;
  count: number;
  log: (line: string) => void;
}): Promise<ProviderResult> {
  const prepared = performance.now();
  const pkg = await packProject();
  const program = await installProgram(join(BENCH_DIR, "programs", "fifty-endpoints"), pkg);
  const prepareMs = performance.now() - prepared;
  options.log(`  package packed and installed in ${prepareMs.toFixed(0)} ms`);

  const wall: Record<Operation, number[]> = {
    create: [],
    noopUpdate: [],
    update: [],
    refresh: [],
    delete: [],
  };
  const last = {} as Record<Operation, { steps: OpCounts; calls: CallCount[] }>;
  const totals: Record<Operation, number[]> = {
    create: [],
    noopUpdate: [],
    update: [],
    refresh: [],
    delete: [],
  };
  for (let cycle = 0; cycle < options.cycles; cycle++) {
    const data = await tempDataDir();
    const workDir = await mkdtemp(join(tmpdir(), "runpodkit-bench-stack-"));
    const svc: BenchService = await startService({ data: data.file, countCalls: true });
    try {
      const stack = await LocalStack.open({
        programDir: program.dir,
        stackName: "bench",
        stateDir: join(workDir, "state"),
        passphrase: randomBytes(16).toString("hex"),
      });
      stack.setAllConfig({
        "runpodkit:apiKey": { value: BENCH_API_KEY, secret: true },
        "runpodkit:restUrl": { value: svc.ready.restUrl },
        "runpodkit:graphqlUrl": { value: svc.ready.graphqlUrl },
        "runpodkit:queueUrl": { value: svc.ready.queueUrl },
        count: { value: String(options.count) },
        generation: { value: "1" },
      });
      const step = async (operation: Operation, run: () => Promise<{ changes: OpCounts }>) => {
        await svc.resetCalls();
        const started = performance.now();
        const { changes } = await run();
        const ms = performance.now() - started;
        const { calls } = await svc.stats();
        wall[operation].push(ms);
        last[operation] = { steps: changes, calls: calls.sort((a, b) => a.key.localeCompare(b.key)) };
        const total = calls.reduce((n, c) => n + c.count, 0);
        totals[operation].push(total);
        options.log(
          `  ${operation}: ${ms.toFixed(0)} ms, ${total} API calls, steps ${JSON.stringify(changes)}`,
        );
      };
      await step("create", () => stack.up());
      await step("noopUpdate", () => stack.up());
      stack.setConfig("generation", { value: "2" });
      await step("update", () => stack.up());
      await step("refresh", () => stack.refresh());
      await step("delete", () => stack.destroy());
    } finally {
      await svc.close();
      await data.remove();
      await rm(workDir, { recursive: true, force: true });
    }
  }
  const operations = {} as Record<Operation, OperationResult>;
  for (const operation of OPERATIONS) {
    operations[operation] = {
      wallMs: figure(wall[operation], "ms", 0),
      steps: last[operation].steps,
      perResource: perResource(last[operation].calls, options.count),
      calls: last[operation].calls,
      totalCallsPerCycle: totals[operation],
    };
  }
  return {
    endpoints: options.count,
    templates: options.count,
    cycles: options.cycles,
    operations,
    prepareMs: Math.round(prepareMs),
  };
}
