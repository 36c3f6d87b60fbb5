import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { startHarness } from "../jobs/harness";
import { within } from "../security/cli";

const base = mkdtempSync(join(tmpdir(), "runpodkit handler path-"));
afterAll(() => rmSync(base, { recursive: true, force: true }));

describe("a handler module whose path has a space", () => {
  it("runs as a module: its jobs complete", async () => {
    mkdirSync(join(base, "my handlers"));
    const file = join(base, "my handlers", "double.mjs");
    writeFileSync(file, "export function handler(job) { return { doubled: job.input.n * 2 }; }\n");
    const h = await startHarness({ config: { handlers: { "acme/double": file } } });
    try {
      const ep = h.endpoint("acme/double");
      const { id } = (await h.call("POST", `/v2/${ep.id}/run`, { body: { input: { n: 21 } } })).body as {
        id: string;
      };
      // Taken for a command line, every worker's shell ran the path's first word ("not found"), and
      // the job stayed IN_QUEUE.
      let job: unknown;
      await within(20_000, async () => {
        job = (await h.call("GET", `/v2/${ep.id}/status/${id}`)).body;
        return (job as { status: string }).status === "COMPLETED";
      });
      expect(job).toMatchObject({ status: "COMPLETED", output: { doubled: 42 } });
      expect(h.logs.filter((line) => line.includes("unquoted"))).toEqual([]);
    } finally {
      await h.close();
    }
  }, 60_000);
});
