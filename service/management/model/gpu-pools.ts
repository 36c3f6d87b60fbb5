import { GPU_POOL_IDS, splitCommaList } from "../../../sdk/schemas/defaults";

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

function isPool(id: string): id is PoolId {
  return (GPU_POOL_IDS as readonly string[]).includes(id);
}

/** "AMPERE_48,-NVIDIA RTX A6000" -> ["NVIDIA A40"]: the pools' types minus the exclusions. */
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
 * their members that were not listed, so the two forms describe the same choice. Returns undefined
 * when no listed type belongs to a pool.
 */
export function poolsOfGpuTypes(gpuTypeIds: readonly string[]): string | undefined {
  const pools: string[] = [];
  const exclusions: string[] = [];
  for (const pool of GPU_POOL_IDS) {
    const members = GPU_POOLS[pool];
    if (!members.some((type) => gpuTypeIds.includes(type))) continue;
    pools.push(pool);
    for (const type of members) if (!gpuTypeIds.includes(type)) exclusions.push(`-${type}`);
  }
  return pools.length > 0 ? [...pools, ...exclusions].join(",") : undefined;
}
