/** The shapes of results.json: each figure keeps its runs and their median. */
import { median, round } from "./stats";

export interface Figure {
  median: number;
  runs: number[];
  unit: string;
}

export function figure(runs: readonly number[], unit: string, digits = 2): Figure {
  return { median: round(median(runs), digits), runs: runs.map((r) => round(r, digits)), unit };
}

/** Paired ratios a[i]/b[i] (each pair measured side by side), as a figure. */
export function ratioFigure(a: readonly number[], b: readonly number[]): Figure {
  return figure(
    a.map((x, i) => x / (b[i] ?? Number.NaN)),
    "ratio",
    3,
  );
}

export interface Target {
  name: string;
  /** e.g. ">= 10000 /s" */
  target: string;
  value: number | null;
  unit: string;
  met: boolean | null;
  note?: string;
}

export function atLeast(
  name: string,
  value: number | null,
  bound: number,
  unit: string,
  note?: string,
): Target {
  return { name, target: `>= ${bound}`, value, unit, met: value === null ? null : value >= bound, note };
}

export function atMost(
  name: string,
  value: number | null,
  bound: number,
  unit: string,
  note?: string,
): Target {
  return { name, target: `<= ${bound}`, value, unit, met: value === null ? null : value <= bound, note };
}
