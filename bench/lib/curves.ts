/**
 * Judging a scaling curve: whether the cost per unit of work stays flat as the work grows, where it
 * bends (a knee), and the linearity bar of the provider target. Pure functions of the figures.
 */
import { round } from "./stats";

export interface CurvePoint {
  /** The size of the work: queue depth, workers, endpoints, resources. */
  x: number;
  /** Cost per unit at that size (CPU per request, per job, time per resource). */
  perUnit: number;
}

export interface CurveJudgement {
  /** perUnit at the largest x / perUnit at the smallest x. */
  growth: number;
  /** growth within `tolerance` (cost per unit at most that much higher at the largest size). */
  flat: boolean;
  /** The first x whose perUnit is more than `step` times the previous point's, if any. */
  knee: number | null;
  /** One line for the report, e.g. "flat: 33.1 -> 35.0 us/request (x1.06) from 1000 to 1000000". */
  summary: string;
}

/**
 * Flat means the cost per unit at the largest size is at most `tolerance` times that at the smallest
 * (1.25 by default: 25% more per unit over a 10x-1000x range of work); a knee is a step of more than
 * `step` (1.25) between neighbouring sizes.
 */
export function judgeCurve(
  points: readonly CurvePoint[],
  unit: string,
  options: { tolerance?: number; step?: number } = {},
): CurveJudgement | null {
  const tolerance = options.tolerance ?? 1.25;
  const step = options.step ?? 1.25;
  const sorted = [...points].filter((p) => Number.isFinite(p.perUnit)).sort((a, b) => a.x - b.x);
  const first = sorted[0];
  const last = sorted.at(-1);
  if (!first || !last || sorted.length < 2 || first.perUnit <= 0) return null;
  const growth = last.perUnit / first.perUnit;
  let knee: number | null = null;
  for (let i = 1; i < sorted.length; i++) {
    const prev = sorted[i - 1] as CurvePoint;
    const here = sorted[i] as CurvePoint;
    if (prev.perUnit > 0 && here.perUnit / prev.perUnit > step) {
      knee = here.x;
      break;
    }
  }
  const flat = growth <= tolerance;
  const verdict = flat ? "flat" : growth < 1 ? "falling" : "rising";
  const kneeText = knee === null ? "" : `; knee at ${knee}`;
  return {
    growth: round(growth, 2),
    flat,
    knee,
    summary: `${verdict}: ${round(first.perUnit, 2)} -> ${round(last.perUnit, 2)} ${unit} (x${round(growth, 2)}) from ${first.x} to ${last.x}${kneeText}`,
  };
}

/**
 * The provider's linearity bar: time per resource at the large size within `factor` (1.5) times
 * that at the small size. A fixed start-up cost makes time per resource fall with size, which passes;
 * a cost per resource that grows with the stack (quadratic work) fails. The ratio large / small.
 */
export function linearity(
  small: { resources: number; ms: number },
  large: { resources: number; ms: number },
): number {
  return round(large.ms / large.resources / (small.ms / small.resources), 3);
}

export const LINEAR_FACTOR = 1.5;

/**
 * The cost of each added unit between neighbouring sizes: (total(b) - total(a)) / (b - a). Where a
 * fixed start-up cost dominates (a program's start, a process's), the cost per unit falls with size
 * and says little; the marginal cost shows whether each added unit costs the same at every size.
 */
export function marginalCosts(
  points: readonly { x: number; total: number }[],
): { from: number; to: number; perUnit: number }[] {
  const sorted = [...points].filter((p) => Number.isFinite(p.total)).sort((a, b) => a.x - b.x);
  const out: { from: number; to: number; perUnit: number }[] = [];
  for (let i = 1; i < sorted.length; i++) {
    const a = sorted[i - 1] as { x: number; total: number };
    const b = sorted[i] as { x: number; total: number };
    if (b.x > a.x) out.push({ from: a.x, to: b.x, perUnit: round((b.total - a.total) / (b.x - a.x), 2) });
  }
  return out;
}
