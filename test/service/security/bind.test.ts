import { describe, expect, it } from "vitest";
import { isLoopback } from "../../../service/edge/server";
import { startCli } from "./cli";

const ENV = { RUNPODKIT_API_KEYS: "rpk_bind_alpha_0123456789abcdef" };

describe("who can reach the service", () => {
  it("listens on loopback by default, without a warning", async () => {
    const cli = startCli(["--data", ":memory:"], ENV);
    try {
      const { restUrl } = await cli.ready;
      expect(restUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
      expect(cli.stderr()).not.toContain("not on loopback");
    } finally {
      cli.kill();
    }
  });

  it("warns when told to listen on any other address", async () => {
    const cli = startCli(["--data", ":memory:", "--host", "0.0.0.0"], ENV);
    try {
      const { restUrl } = await cli.ready;
      expect(cli.stderr()).toContain("warning: listening on 0.0.0.0, not on loopback");
      const reply = await fetch(`${restUrl}/endpoints`, {
        headers: { authorization: `Bearer ${ENV.RUNPODKIT_API_KEYS}` },
      });
      expect(reply.status).toBe(200);
    } finally {
      cli.kill();
    }
  });

  it("knows which addresses are loopback", () => {
    for (const host of ["127.0.0.1", "127.1.2.3", "localhost", "::1", "[::1]", "::ffff:127.0.0.1"])
      expect(isLoopback(host)).toBe(true);
    for (const host of ["0.0.0.0", "::", "192.168.1.10", "10.0.0.1", "example.com", "128.0.0.1"])
      expect(isLoopback(host)).toBe(false);
  });
});
