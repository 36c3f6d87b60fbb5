import { resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../../service/clock";
import { DEFAULT_LOG_LIMITS } from "../../../service/jobs/logs/log-book";
import type { EndpointRecord } from "../../../service/management/model/endpoint";
import { eventually, type Harness, startHarness } from "../jobs/harness";
import { entriesOf, logsCli, runsyncCompleted } from "./support";

const NOISY = resolve("test/service/logs/fixtures/noisy-handler.ts");

/** What a worker prints as a terminal would show it, and which job each line is read as belonging to. */
describe("worker lines as a terminal shows them, attributed to their job", () => {
  let h: Harness;
  afterEach(async () => h?.close());

  const runsync = (ep: EndpointRecord, input: unknown) => runsyncCompleted(h, ep, input);
  const logsOf = async (ep: EndpointRecord, query = "") =>
    entriesOf((await h.call("GET", `/v2/${ep.id}/logs${query}`)).text);

  it("a progress bar of 500 \\r redraws is one entry, its final state, in the API and `runpodkit logs`", async () => {
    h = await startHarness({ config: { handlers: { "acme/noisy": NOISY } } });
    const ep = h.endpoint("acme/noisy");
    const id = await runsync(ep, { mode: "progress", steps: 500 });
    const entries = await eventually(async () => {
      const list = await logsOf(ep, `?job=${id}`);
      return list.some((e) => e.message.startsWith("500/500")) ? list : undefined;
    }, 10_000);
    // Before: 502 entries, one per redraw, the first an empty one.
    const bar = entries.filter((e) => e.stream === "stderr");
    expect(bar.map((e) => e.message)).toEqual([`500/500 [${"#".repeat(20)}]`]);
    expect(bar[0]).toMatchObject({ level: "ERROR", requestId: id });
    // In the order printed: the runtime's "Started." (held up to 20 ms to be written with others) is
    // written before the handler's stderr, not after it.
    const messages = entries.map((e) => e.message);
    expect(messages.indexOf("Started.")).toBeGreaterThanOrEqual(0);
    expect(messages.indexOf("Started.")).toBeLessThan(messages.indexOf(bar[0]?.message ?? ""));

    const cli = logsCli(`${h.url}/v2`, [ep.id, "--job", id]);
    await cli.exited;
    expect(cli.seen.code).toBe(0);
    const printed = cli.seen.stdout.split("\n").filter((line) => line.includes("/500 ["));
    expect(printed).toHaveLength(1);
    expect(printed[0]).toContain(`${id} ERROR 500/500 [${"#".repeat(20)}]`);
  });

  it("a line the handler's async work prints just after its job ended belongs to that job; one printed after the grace, between jobs, to none", async () => {
    const clock = new ManualClock(Date.now());
    h = await startHarness({
      clock,
      config: { handlers: { "acme/noisy": NOISY }, logs: { ...DEFAULT_LOG_LIMITS, lateLineMs: 2_000 } },
    });
    const ep = h.endpoint("acme/noisy");
    const id = await runsync(ep, { mode: "late", text: "uploaded the result", delayMs: 200 });
    const late = await eventually(async () => {
      const list = await logsOf(ep, `?job=${id}`);
      return list.find((e) => e.message === "uploaded the result");
    }, 10_000);
    // Before: requestId null, so `--job` and the console's job view left it out.
    expect(late).toMatchObject({ requestId: id, stream: "stdout" });
    const cli = logsCli(`${h.url}/v2`, [ep.id, "--job", id]);
    await cli.exited;
    expect(cli.seen.stdout).toContain(`${id} INFO  uploaded the result`);

    // Past the grace (the service's clock moved 2 s past the job's end): a line between jobs names none.
    const next = await runsync(ep, { mode: "late", text: "idle chatter", delayMs: 300 });
    await clock.advance(2_001);
    const idle = await eventually(async () => {
      const list = await logsOf(ep);
      return list.find((e) => e.message === "idle chatter");
    }, 10_000);
    expect(idle?.requestId).toBeNull();
    expect((await logsOf(ep, `?job=${next}`)).map((e) => e.message)).not.toContain("idle chatter");
  });
});
