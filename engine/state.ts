/**
 * A stack's state: the resources the engine manages, with their inputs and outputs, kept across runs in
 * one JSON file per stack. In memory secrets are plain secret values; on disk they are sealed.
 */
import { readFile, rename, writeFile } from "node:fs/promises";
import { z } from "zod";
import { EngineError } from "./errors";
import type { SecretBox } from "./secret-box";
import type { CustomTimeouts } from "./timeouts";
import type { PropertyMap, PropertyValue } from "./values";

export interface ResourceState {
  urn: string;
  type: string;
  custom: boolean;
  /** Provider id of a custom resource; "" for components and the stack. */
  id: string;
  parent: string;
  inputs: PropertyMap;
  outputs: PropertyMap;
  dependencies: string[];
  propertyDependencies: Record<string, string[]>;
  additionalSecretOutputs: string[];
  deleteBeforeReplace: boolean;
  protect: boolean;
  retainOnDelete: boolean;
  /** Read with Resource.get: tracked, never deleted by the engine. */
  external: boolean;
  /** The old half of a create-before-delete replacement, deleted at the end of the run. */
  pendingDelete: boolean;
  /** The program's customTimeouts (Go durations such as "5m"); the delete one is used from state. */
  customTimeouts?: CustomTimeouts;
}

export interface StackState {
  project: string;
  stack: string;
  resources: ResourceState[];
}

const propertyMap = z.record(z.string(), z.json());
const resourceSchema = z.object({
  urn: z.string(),
  type: z.string(),
  custom: z.boolean(),
  id: z.string(),
  parent: z.string(),
  inputs: propertyMap,
  outputs: propertyMap,
  dependencies: z.array(z.string()),
  propertyDependencies: z.record(z.string(), z.array(z.string())),
  additionalSecretOutputs: z.array(z.string()),
  deleteBeforeReplace: z.boolean(),
  protect: z.boolean(),
  retainOnDelete: z.boolean(),
  external: z.boolean(),
  pendingDelete: z.boolean(),
  customTimeouts: z.object({ create: z.string(), update: z.string(), delete: z.string() }).optional(),
});
const stateFileSchema = z.object({
  version: z.literal(1),
  project: z.string(),
  stack: z.string(),
  secrets: z.object({ provider: z.literal("passphrase"), salt: z.string(), check: z.string() }),
  resources: z.array(resourceSchema),
});
export type StateFile = z.infer<typeof stateFileSchema>;

export function emptyState(project: string, stack: string): StackState {
  return { project, stack, resources: [] };
}

/** Reads the salt of an existing state file, so the same passphrase derives the same key. */
export async function readStateFile(path: string): Promise<StateFile | undefined> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  const parsed = stateFileSchema.safeParse(JSON.parse(text));
  if (!parsed.success) {
    throw new EngineError("STATE_INVALID", "state.read", `state file is not valid: ${parsed.error.message}`);
  }
  return parsed.data;
}

export function openState(file: StateFile, box: SecretBox): StackState {
  box.verify(file.secrets.check);
  return {
    project: file.project,
    stack: file.stack,
    resources: file.resources.map((r) => ({
      ...r,
      inputs: openMap(r.inputs as PropertyMap, box),
      outputs: openMap(r.outputs as PropertyMap, box),
    })),
  };
}

/** Writes atomically (temp file + rename) so a crash never leaves half a state file. */
export async function saveState(
  path: string,
  state: StackState,
  box: SecretBox,
  check: string,
): Promise<void> {
  const file: StateFile = {
    version: 1,
    project: state.project,
    stack: state.stack,
    secrets: { provider: "passphrase", salt: box.salt, check },
    resources: state.resources.map((r) => ({
      ...r,
      inputs: sealMap(r.inputs, box),
      outputs: sealMap(r.outputs, box),
    })),
  };
  const temp = `${path}.${process.pid}.tmp`;
  await writeFile(temp, `${JSON.stringify(file, null, 2)}\n`, "utf8");
  await rename(temp, path);
}

function sealMap(map: PropertyMap, box: SecretBox): PropertyMap {
  return box.seal(map) as PropertyMap;
}

function openMap(map: PropertyMap, box: SecretBox): PropertyMap {
  return box.open(map as PropertyValue) as PropertyMap;
}

/**
 * Resources ordered so that each comes after everything it depends on (dependencies, property
 * dependencies and parent). Deleting walks this order backwards. Unknown URNs (already gone) are ignored.
 */
export function dependencyOrder(resources: readonly ResourceState[]): ResourceState[] {
  const byUrn = new Map<string, ResourceState[]>();
  for (const r of resources) byUrn.set(r.urn, [...(byUrn.get(r.urn) ?? []), r]);
  const ordered: ResourceState[] = [];
  const state = new Map<ResourceState, "visiting" | "done">();
  const visit = (r: ResourceState): void => {
    const mark = state.get(r);
    if (mark === "done" || mark === "visiting") return; // a cycle cannot be ordered; keep going
    state.set(r, "visiting");
    const needs = new Set([...r.dependencies, ...Object.values(r.propertyDependencies).flat(), r.parent]);
    for (const urn of needs) {
      for (const dep of byUrn.get(urn) ?? []) if (dep !== r) visit(dep);
    }
    state.set(r, "done");
    ordered.push(r);
  };
  for (const r of resources) visit(r);
  return ordered;
}

/** A state writer whose concurrent requests coalesce (see `coalescedWrites`). */
export interface CoalescedWrites {
  /** Requests a write; resolves once a write that started after this call has finished. */
  write(): Promise<void>;
  /** The last write requested so far, settled. */
  settled(): Promise<void>;
}

/**
 * State writes in order, one at a time, each of the state as of its turn. A request made while a
 * write is still waiting for its turn joins that write (which snapshots the state later than the
 * request), so steps finishing together cost one write, not one each: writing the whole state per
 * step is quadratic in the stack's size (bench/README.md, stack-size curve).
 */
export function coalescedWrites(write: () => Promise<void>): CoalescedWrites {
  let last: Promise<void> = Promise.resolve();
  let waiting: Promise<void> | null = null;
  return {
    write() {
      if (waiting) return waiting;
      const next = last.then(() => {
        waiting = null;
        return write();
      });
      waiting = next;
      last = next;
      return next;
    },
    settled: () => last,
  };
}
