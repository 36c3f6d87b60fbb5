/**
 * A worker's directory is removed when it exits; a service killed outright leaves its workers'
 * directories behind, and the next service to start removes those of services that are gone.
 */
import { existsSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { startCli, within } from "./cli";

const KEY = "rpk_workerdirs_alpha_0123456789";

async function call(base: string, method: string, path: string, body?: unknown) {
  const reply = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: KEY, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: reply.status, body: (await reply.json()) as Record<string, unknown> };
}

const dirsOf = (pid: number) =>
  readdirSync(tmpdir()).filter((name) => name.startsWith(`runpodkit-worker-${pid}-`));

describe("worker directories of a killed service", () => {
  it("are removed when the next service starts", async () => {
    const env = { RUNPODKIT_API_KEYS: KEY, TMPDIR: tmpdir() };
    const first = startCli(["--data", ":memory:"], env);
    let left: string[] = [];
    try {
      const { restUrl } = await first.ready;
      const template = await call(restUrl, "POST", "/templates", {
        name: "dirs",
        imageName: "runpodkit/echo",
        isServerless: true,
      });
      await call(restUrl, "POST", "/endpoints", {
        templateId: template.body.id,
        workersMin: 1,
        workersMax: 1,
      });
      const pid = first.child.pid as number;
      expect(await within(20_000, () => dirsOf(pid).length > 0)).toBe(true);
      left = dirsOf(pid);
      first.child.kill("SIGKILL");
      await first.exited;
    } finally {
      first.kill();
    }
    expect(left.every((name) => existsSync(join(tmpdir(), name)))).toBe(true);

    const second = startCli(["--data", ":memory:"], env);
    try {
      await second.ready;
      expect(left.filter((name) => existsSync(join(tmpdir(), name)))).toEqual([]);
    } finally {
      second.kill();
      await second.exited;
    }
  }, 60_000);
});
