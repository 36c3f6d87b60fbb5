import { GPU_POOL_IDS, splitCommaList } from "./defaults";

// Without zod, like defaults.ts: the service's endpoint rules read it at start. common.ts re-exports it.

type PoolId = (typeof GPU_POOL_IDS)[number];

/**
 * GPU types in each GraphQL pool, by memory size and generation (the real service's grouping). GPU
 * types outside every pool (B200, RTX 5090, ...) can be chosen through REST gpuTypeIds only.
 */
export const GPU_POOLS: Record<PoolId, readonly string[]> = {
  AMPERE_16: [
    "NVIDIA RTX A4000",
    "NVIDIA RTX A4500",
    "NVIDIA RTX 4000 Ada Generation",
    "NVIDIA RTX 2000 Ada Generation",
    "NVIDIA RTX 4000 SFF Ada Generation",
    "NVIDIA RTX A2000",
  ],
  AMPERE_24: ["NVIDIA RTX A5000", "NVIDIA L4", "NVIDIA GeForce RTX 3090"],
  ADA_24: ["NVIDIA GeForce RTX 4090"],
  AMPERE_48: ["NVIDIA RTX A6000", "NVIDIA A40"],
  ADA_48_PRO: ["NVIDIA L40", "NVIDIA L40S", "NVIDIA RTX 6000 Ada Generation"],
  AMPERE_80: ["NVIDIA A100 80GB PCIe", "NVIDIA A100-SXM4-80GB"],
  ADA_80_PRO: ["NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe", "NVIDIA H100 NVL"],
};

/**
 * What GraphQL gpuIds reads for a GPU endpoint whose REST gpuTypeIds no pools and exclusions can
 * describe (a type outside every pool, such as B200, or no type): an empty string, never a pool
 * list that would name other GPUs. saveEndpoint refuses it, so saving it back cannot change the GPUs.
 */
export const GPU_IDS_NOT_POOLS = "";

/** Why a GPU endpoint without a GPU type is refused (REST gpuTypeIds: []). */
export const GPU_ENDPOINT_NEEDS_A_TYPE = "a GPU endpoint needs at least one GPU type";

function isPool(id: string): id is PoolId {
  return (GPU_POOL_IDS as readonly string[]).includes(id);
}

/** "AMPERE_48,-NVIDIA RTX A6000" -> ["NVIDIA A40"]: the pools' types, in the pools' order, minus the exclusions. */
export function gpuTypesOfPools(gpuIds: string): string[] {
  const items = splitCommaList(gpuIds);
  const excluded = new Set(items.filter((i) => i.startsWith("-")).map((i) => i.slice(1).trim()));
  const types: string[] = [];
  for (const item of items) {
    if (!isPool(item)) continue;
    for (const type of GPU_POOLS[item]) if (!excluded.has(type) && !types.includes(type)) types.push(type);
  }
  return types;
}

/**
 * ["NVIDIA A40"] -> "AMPERE_48,-NVIDIA RTX A6000": the pools holding the listed types, excluding
 * their members that were not listed, so the two forms describe the same set of types. Pools come in
 * the order of the first listed type each holds, so the priority survives as far as pools can say
 * it. Returns undefined when no pools can say it: a listed type outside every pool, or no type.
 */
export function poolsOfGpuTypes(gpuTypeIds: readonly string[]): string | undefined {
  const pools: PoolId[] = [];
  for (const type of gpuTypeIds) {
    const pool = GPU_POOL_IDS.find((id) => GPU_POOLS[id].includes(type));
    if (pool === undefined) return undefined;
    if (!pools.includes(pool)) pools.push(pool);
  }
  if (pools.length === 0) return undefined;
  const exclusions = pools.flatMap((pool) =>
    GPU_POOLS[pool].filter((type) => !gpuTypeIds.includes(type)).map((type) => `-${type}`),
  );
  return [...pools, ...exclusions].join(",");
}

/** Whether two lists hold the same GPU types, in any order. */
export function sameGpuTypes(a: readonly string[], b: readonly string[]): boolean {
  const left = new Set(a);
  const right = new Set(b);
  return left.size === right.size && [...left].every((type) => right.has(type));
}
