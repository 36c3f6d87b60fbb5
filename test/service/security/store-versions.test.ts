import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterAll, describe, expect, it } from "vitest";
import { startCli } from "./cli";

const dir = mkdtempSync(join(tmpdir(), "runpodkit-store-versions-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const KEY = "rpk_versions_alpha_0123456789";
const ENV = { RUNPODKIT_API_KEYS: KEY, RUNPODKIT_STORE_KEY: randomBytes(32).toString("hex") };

async function call(base: string, method: string, path: string, body?: unknown) {
  const reply = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await reply.text();
  return { status: reply.status, body: (text ? JSON.parse(text) : {}) as Record<string, unknown> };
}

describe("a store written by a newer runpodkit", () => {
  it("is refused at start naming --data and the migrations this version does not know; the file is left as it was; the right version opens it", async () => {
    const data = join(dir, "newer.sqlite");
    const first = startCli(["--data", data], ENV);
    let templateId = "";
    try {
      const { restUrl } = await first.ready;
      const template = await call(restUrl, "POST", "/templates", {
        name: "kept",
        imageName: "runpodkit/echo",
      });
      expect(template.status).toBe(200);
      templateId = String(template.body.id);
      first.child.kill("SIGTERM");
      await first.exited;
    } finally {
      first.kill();
    }
    // What a later version's start leaves: a migration of its own recorded (and its schema change).
    const newer = new DatabaseSync(data);
    newer.exec("ALTER TABLE mgmt_templates ADD COLUMN later_field TEXT NOT NULL DEFAULT ''");
    newer.exec("INSERT INTO migrations (name, applied_at) VALUES ('management-999-later', 1)");
    newer.close();
    const before = readFileSync(data);

    // Twice: a refusal changes nothing that would let a second start through.
    for (let attempt = 0; attempt < 2; attempt++) {
      const older = startCli(["--data", data], ENV);
      // A version that served it anyway fails here at once, not by the test's timeout.
      const outcome = await Promise.race([older.exited, older.ready.then(() => "served" as const)]);
      older.kill();
      expect(outcome).toEqual({ code: 1, signal: null });
      expect(older.stderr().trim()).toBe(
        `runpodkit: --data ${data}: the store cannot be opened there: it was written by a newer runpodkit (migration management-999-later unknown to this version): run that version or a later one on it, or give this one another --data`,
      );
      expect(readFileSync(data).equals(before)).toBe(true);
      expect(existsSync(`${data}.lock`)).toBe(false);
    }

    // The version that knows every migration in it (played here by forgetting the later one) serves it.
    const known = new DatabaseSync(data);
    known.exec("DELETE FROM migrations WHERE name = 'management-999-later'");
    known.close();
    const again = startCli(["--data", data], ENV);
    try {
      const { restUrl } = await again.ready;
      expect((await call(restUrl, "GET", `/templates/${templateId}`)).body).toMatchObject({ name: "kept" });
    } finally {
      again.kill();
      await again.exited;
    }
  }, 60_000);
});
