import { describe, expect, it } from "vitest";
import { judgeCurve, LINEAR_FACTOR, linearity, marginalCosts } from "../../bench/lib/curves";

describe("judgeCurve", () => {
  it("calls a curve flat when the cost per unit at the largest size is within 1.25x of the smallest", () => {
    const judged = judgeCurve(
      [
        { x: 1_000_000, perUnit: 36 },
        { x: 1_000, perUnit: 33 },
        { x: 100_000, perUnit: 34 },
      ],
      "us/request",
    );
    expect(judged).toEqual({
      growth: 1.09,
      flat: true,
      knee: null,
      summary: "flat: 33 -> 36 us/request (x1.09) from 1000 to 1000000",
    });
  });

  it("finds the knee: the first size whose cost per unit jumps more than 1.25x over the previous", () => {
    const judged = judgeCurve(
      [
        { x: 1, perUnit: 400 },
        { x: 2, perUnit: 410 },
        { x: 4, perUnit: 420 },
        { x: 8, perUnit: 600 },
        { x: 16, perUnit: 900 },
      ],
      "us/job",
    );
    expect(judged?.flat).toBe(false);
    expect(judged?.growth).toBe(2.25);
    expect(judged?.knee).toBe(8);
    expect(judged?.summary).toBe("rising: 400 -> 900 us/job (x2.25) from 1 to 16; knee at 8");
  });

  it("says falling when a fixed cost is spread over more work", () => {
    const judged = judgeCurve(
      [
        { x: 10, perUnit: 300 },
        { x: 500, perUnit: 20 },
      ],
      "ms/resource",
      { tolerance: LINEAR_FACTOR },
    );
    expect(judged?.flat).toBe(true);
    expect(judged?.summary.startsWith("flat: 300 -> 20")).toBe(true);
  });

  it("gives no judgement with fewer than two usable points", () => {
    expect(judgeCurve([{ x: 1, perUnit: 5 }], "us")).toBeNull();
    expect(
      judgeCurve(
        [
          { x: 1, perUnit: 5 },
          { x: 2, perUnit: Number.NaN },
        ],
        "us",
      ),
    ).toBeNull();
  });
});

describe("linearity", () => {
  it("is the time per resource at the large size over that at the small size", () => {
    // 100 resources in 2,000 ms (20 ms each); 500 in 12,000 ms (24 ms each): 1.2x, linear.
    expect(linearity({ resources: 100, ms: 2_000 }, { resources: 500, ms: 12_000 })).toBe(1.2);
    // 500 in 40,000 ms (80 ms each): 4x per resource, quadratic work.
    expect(linearity({ resources: 100, ms: 2_000 }, { resources: 500, ms: 40_000 })).toBe(4);
    expect(4 > LINEAR_FACTOR && 1.2 <= LINEAR_FACTOR).toBe(true);
  });
});

describe("marginalCosts", () => {
  it("is the cost of each added unit between neighbouring sizes, whatever the fixed part", () => {
    // 8 s fixed + 10 ms per resource up to 100, then 20 ms per added resource.
    expect(
      marginalCosts([
        { x: 500, total: 17_000 },
        { x: 10, total: 8_100 },
        { x: 100, total: 9_000 },
      ]),
    ).toEqual([
      { from: 10, to: 100, perUnit: 10 },
      { from: 100, to: 500, perUnit: 20 },
    ]);
  });
});
