import { describe, expect, it } from "vitest";
import { ManualClock } from "../../service/clock";

describe("ManualClock", () => {
  it("fires timers in due order and only when time reaches them", async () => {
    const clock = new ManualClock(1_000);
    const fired: string[] = [];
    clock.setTimer(300, () => fired.push(`b@${clock.now()}`));
    clock.setTimer(100, () => fired.push(`a@${clock.now()}`));
    const cancelled = clock.setTimer(200, () => fired.push("never"));
    cancelled.cancel();

    await clock.advance(99);
    expect(fired).toEqual([]);
    await clock.advance(250);
    expect(fired).toEqual(["a@1100", "b@1300"]);
    expect(clock.now()).toBe(1_349);
    expect(clock.pending).toBe(0);
  });

  it("completes sleep-then-act chains within one advance", async () => {
    const clock = new ManualClock(0);
    const steps: number[] = [];
    const chain = (async () => {
      for (let i = 0; i < 3; i++) {
        await clock.sleep(10_000);
        steps.push(clock.now());
      }
    })();
    await clock.advance(30_000);
    await chain;
    expect(steps).toEqual([10_000, 20_000, 30_000]);
  });

  it("rejects a sleep when its signal aborts", async () => {
    const clock = new ManualClock(0);
    const controller = new AbortController();
    const sleeping = clock.sleep(5_000, controller.signal);
    controller.abort(new Error("stop"));
    await expect(sleeping).rejects.toThrow("stop");
    expect(clock.pending).toBe(0);
  });
});
