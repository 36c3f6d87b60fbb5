import { afterEach, describe, expect, it } from "vitest";
import { type Harness, startHarness } from "./harness";

describe("smoke", () => {
  let h: Harness;
  afterEach(async () => h?.close());

  it("runs an echo job end to end", async () => {
    h = await startHarness();
    const ep = h.endpoint("runpodkit/echo");
    const r = await h.call("POST", `/v2/${ep.id}/runsync`, { body: { input: { hello: "world" } } });
    console.log(r.status, r.body, h.logs);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ status: "COMPLETED", output: { hello: "world" } });
  });
});
