import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/**
 * Vitest's order (longest first by the last run's durations; without them, as in a fresh clone, the
 * largest file first), with test/e2e's files ahead of the rest. They take 20-110 s each, against a few
 * seconds for most others, and their files are small: sorted by size, one could start last and run
 * alone on one core while the other idles.
 */
class EndToEndFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (file: TestSpecification) => (file.moduleId.includes("/test/e2e/") ? 0 : 1);
    // Array.prototype.sort is stable: each group keeps vitest's order.
    return sorted.sort((a, b) => rank(a) - rank(b));
  }
}

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Two files at once on two cores: vitest's default (cores - 1) runs one there, and the suite's
    // files spend much of their time waiting on the processes they start (services, provider hosts,
    // Pulumi programs, package installs). Measured on a quiet 2-core machine: 1,181 s for the whole
    // suite with two, 1,669 s with one.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    sequence: { sequencer: EndToEndFirst },
  },
});
