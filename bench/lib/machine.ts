/** What the figures were measured on: they only mean something together with this. */
import { cpus, freemem, loadavg, totalmem } from "node:os";

export interface Machine {
  cores: number;
  cpuModel: string;
  node: string;
  platform: string;
  memoryGb: number;
  freeMemoryGbAtStart: number;
  /** 1-minute load average when the bench started (other work on the same cores skews figures). */
  loadAverageAtStart: number;
}

export function machine(): Machine {
  const list = cpus();
  return {
    cores: list.length,
    cpuModel: list[0]?.model.trim() ?? "unknown",
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
    memoryGb: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    freeMemoryGbAtStart: Math.round((freemem() / 2 ** 30) * 10) / 10,
    loadAverageAtStart: Math.round((loadavg()[0] ?? 0) * 100) / 100,
  };
}
