import { describe, expect, it } from "vitest";
import { EventBus } from "../../service/event-bus";

interface Events {
  one: [value: number];
  two: [account: string, id: string];
}

describe("EventBus", () => {
  it("calls every listener of the event, in subscription order, with its arguments, synchronously", () => {
    const bus = new EventBus<Events>();
    const calls: string[] = [];
    bus.on("two", (account, id) => calls.push(`first ${account}/${id}`));
    bus.on("two", (account, id) => calls.push(`second ${account}/${id}`));
    bus.on("one", (value) => calls.push(`one ${value}`));
    bus.emit("two", "a", "e1");
    expect(calls).toEqual(["first a/e1", "second a/e1"]);
    bus.emit("one", 7);
    expect(calls).toEqual(["first a/e1", "second a/e1", "one 7"]);
  });

  it("an event nobody listens to is a no-op", () => {
    const bus = new EventBus<Events>();
    expect(() => bus.emit("one", 1)).not.toThrow();
    expect(bus.listenerCount("one")).toBe(0);
  });

  it("unsubscribes; a change during an emit applies from the next emit", () => {
    const bus = new EventBus<Events>();
    const seen: number[] = [];
    const offFirst = bus.on("one", (value) => {
      seen.push(value);
      offFirst();
      bus.on("one", (later) => seen.push(later * 10));
    });
    bus.on("one", (value) => seen.push(value + 100));
    bus.emit("one", 1);
    expect(seen).toEqual([1, 101]);
    bus.emit("one", 2);
    expect(seen).toEqual([1, 101, 102, 20]);
    expect(bus.listenerCount("one")).toBe(2);
  });

  it("a listener's exception reaches the emitter", () => {
    const bus = new EventBus<Events>();
    bus.on("one", () => {
      throw new Error("listener failed");
    });
    expect(() => bus.emit("one", 1)).toThrow("listener failed");
  });
});
