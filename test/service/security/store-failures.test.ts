import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  appendFileSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openDatabase, transaction } from "../../../service/db";
import { keyFileOf, openSealer, StoreKeyError } from "../../../service/management/store/sealing";
import { writeServiceAddress } from "../../../service/service-address";
import { startCli } from "./cli";

const dir = mkdtempSync(join(tmpdir(), "runpodkit-store-failures-"));
const mounts: string[] = [];
afterAll(() => {
  for (const mount of mounts) {
    try {
      execFileSync("umount", [mount]);
    } catch {
      // already gone
    }
  }
  rmSync(dir, { recursive: true, force: true });
});

const KEY = "rpk_storefail_alpha_0123456789";
const ENV = { RUNPODKIT_API_KEYS: KEY, RUNPODKIT_STORE_KEY: randomBytes(32).toString("hex") };

/** An endpoint of the echo image with no workers (its jobs stay queued, so in the store): its id. */
async function idleEndpoint(restUrl: string, name: string): Promise<string> {
  const template = await call(restUrl, "POST", "/templates", {
    name,
    imageName: "runpodkit/echo",
    isServerless: true,
  });
  const endpoint = await call(restUrl, "POST", "/endpoints", {
    templateId: template.body.id,
    workersMin: 0,
    workersMax: 0,
  });
  return String(endpoint.body.id);
}

async function call(base: string, method: string, path: string, body?: unknown) {
  const reply = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await reply.text();
  return {
    status: reply.status,
    retryAfter: reply.headers.get("retry-after"),
    body: (text ? JSON.parse(text) : {}) as Record<string, unknown>,
  };
}

/** A 2 MiB tmpfs (root only): null where it cannot be mounted. */
function smallDisk(name = "disk"): string | null {
  if (process.getuid?.() !== 0) return null;
  const mount = join(dir, name);
  mkdirSync(mount, { recursive: true });
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=2m", "tmpfs", mount], { stdio: "ignore" });
  } catch {
    return null;
  }
  mounts.push(mount);
  return mount;
}

describe("the store refusing writes", () => {
  it("a transaction the disk cannot hold fails with SQLite's reason, not a failed ROLLBACK", () => {
    const data = join(dir, "tx.sqlite");
    const db = openDatabase(data, [{ name: "t", sql: "CREATE TABLE t (v TEXT)" }]);
    try {
      // The file may not grow past its pages now: SQLITE_FULL, as a full disk answers.
      const pages = Number((db.prepare("PRAGMA page_count").get() as { page_count: number }).page_count);
      db.exec(`PRAGMA max_page_count = ${pages + 2}`);
      const insert = db.prepare("INSERT INTO t VALUES (?)");
      expect(() =>
        transaction(db, () => {
          for (let i = 0; i < 100; i++) insert.run("x".repeat(4096));
        }),
      ).toThrow(/database or disk is full/);
      expect(db.isTransaction).toBe(false);
      // The connection goes on: a small write still fits.
      transaction(db, () => insert.run("small"));
      expect(db.prepare("SELECT count(*) AS n FROM t").get()).toEqual({ n: 1 });
    } finally {
      db.close();
    }
  });

  const disk = smallDisk();
  it.skipIf(disk === null)(
    "a full disk: /run and creates answer 503 naming the store, the service lives on and recovers, every acknowledged job is kept (root: tmpfs)",
    async () => {
      const mount = disk as string;
      const data = join(mount, "store.sqlite");
      const cli = startCli(["--data", data], ENV);
      const acked: string[] = [];
      let endpointId = "";
      try {
        const { restUrl, queueUrl } = await cli.ready;
        endpointId = await idleEndpoint(restUrl, "full");
        const pad = "x".repeat(20_000);
        let refused: Awaited<ReturnType<typeof call>> | null = null;
        for (let i = 0; i < 200 && !refused; i++) {
          const reply = await call(queueUrl, "POST", `/v2/${endpointId}/run`, { input: { i, pad } });
          if (reply.status === 200) acked.push(String(reply.body.id));
          else refused = reply;
        }
        expect(refused?.status).toBe(503);
        expect(refused?.retryAfter).toBe("1");
        expect(String(refused?.body.error)).toContain(`the store ${data}: the disk holding it is full`);
        // The log says what became of the refused job. Before: "failed and is retried at the next
        // flush", of a job the client was told to send again and the service did not keep.
        const refusedId = String(refused?.body.error).match(/could not write job (\S+) /)?.[1] ?? "";
        expect(refusedId).not.toBe("");
        const logged = cli.stderr().split("\n");
        expect(logged).toContainEqual(
          expect.stringMatching(
            new RegExp(
              `^runpodkit jobs: job store: the first write of job ${refusedId} failed \\(the disk holding it is full \\(.+\\): free space there\\): its /run is answered 503 and the job not kept, unless a flush before that answer writes it$`,
            ),
          ),
        );
        expect(logged).toContain(
          `runpodkit jobs: job store: job ${refusedId} is not kept: its write was refused and its /run answered 503`,
        );
        expect(logged.filter((line) => line.includes(refusedId) && line.includes("retried"))).toEqual([]);
        // The refused write's pages are freed when it rolls back, so a smaller write could fit again:
        // what is left of the disk is filled, as another program's file would.
        fillUp(join(mount, "filler"));
        // A second one while full: the service still answers (it crashed in a WAL checkpoint).
        const again = await call(queueUrl, "POST", `/v2/${endpointId}/run`, { input: { pad } });
        expect(again.status).toBe(503);
        // A create while full: a small one may still fit in the write-ahead log's pages, which SQLite
        // reuses; a large one needs new pages. Either way an answer, a refusal naming the store.
        const create = await call(restUrl, "POST", "/templates", {
          name: "while-full",
          imageName: "x",
          readme: "r".repeat(65_536),
          env: Object.fromEntries(Array.from({ length: 4 }, (_, i) => [`K${i}`, "v".repeat(60_000)])),
        });
        expect([200, 503]).toContain(create.status);
        if (create.status === 503) {
          expect(String(create.body.message)).toContain(
            `the store ${data} could not write the change: the disk holding it is full`,
          );
        }
        expect(cli.stderr()).not.toMatch(/cannot rollback|Internal server error|at .*\.ts:\d+/);

        // Space returns: writes go through again.
        rmSync(join(mount, "filler"));
        execFileSync("mount", ["-o", "remount,size=32m", mount]);
        const after = await call(queueUrl, "POST", `/v2/${endpointId}/run`, { input: { after: true } });
        expect(after.status).toBe(200);
        acked.push(String(after.body.id));
        expect((await call(restUrl, "POST", "/templates", { name: "after", imageName: "x" })).status).toBe(
          200,
        );
        cli.child.kill("SIGTERM");
        expect((await cli.exited).code).toBe(0);
      } finally {
        cli.kill();
      }

      // A restart on the same file: every acknowledged job, once.
      const restarted = startCli(["--data", data], ENV);
      try {
        const { queueUrl } = await restarted.ready;
        for (const id of acked) {
          const status = await call(queueUrl, "GET", `/v2/${endpointId}/status/${id}`);
          expect(status.status, id).toBe(200);
          expect(status.body.status).toBe("IN_QUEUE");
        }
        const health = await call(queueUrl, "GET", `/v2/${endpointId}/health`);
        expect((health.body.jobs as { inQueue: number }).inQueue).toBe(acked.length);
      } finally {
        restarted.kill();
        await restarted.exited;
      }
    },
    60_000,
  );

  it("a truncated store is refused at start naming --data and saying what to do; the file is left as it was and the lock released", async () => {
    const data = join(dir, "truncated.sqlite");
    const first = startCli(["--data", data], ENV);
    try {
      const { restUrl } = await first.ready;
      for (let i = 0; i < 50; i++) {
        const reply = await call(restUrl, "POST", "/templates", {
          name: `t${i}`,
          imageName: "x".repeat(500),
        });
        expect(reply.status).toBe(200);
      }
      first.child.kill("SIGTERM");
      await first.exited;
    } finally {
      first.kill();
    }
    truncateSync(data, 10_000);
    const before = readFileSync(data);
    const second = startCli(["--data", data], ENV);
    const { code } = await second.exited;
    expect(code).toBe(1);
    expect(second.stderr().trim()).toBe(
      `runpodkit: --data ${data}: the store cannot be opened there: the file is damaged (database disk image is malformed; truncated or overwritten?): the service leaves it as it is; restore it from a backup, or move it and its -wal and -shm files aside to start an empty store`,
    );
    expect(readFileSync(data).equals(before)).toBe(true);
    expect(existsSync(`${data}.lock`)).toBe(false);
  });

  it("a store whose header is intact but whose pages are overwritten is refused the same way", async () => {
    const data = join(dir, "overwritten.sqlite");
    copyFileSync(join(dir, "truncated.sqlite"), data);
    const bytes = readFileSync(data);
    // Keep the 100-byte header; garble the first page's b-tree.
    const garbled = Buffer.concat([bytes.subarray(0, 100), randomBytes(3_000), bytes.subarray(3_100)]);
    writeFileSync(data, garbled);
    const cli = startCli(["--data", data], ENV);
    const { code } = await cli.exited;
    expect(code).toBe(1);
    expect(cli.stderr()).toContain(
      `runpodkit: --data ${data}: the store cannot be opened there: the file is damaged`,
    );
    expect(cli.stderr()).not.toMatch(/at .*\.ts:\d+/);
    expect(existsSync(`${data}.lock`)).toBe(false);
  });
});

describe("a start that fails past the store's open", () => {
  it("a store damaged in its job table's pages (which the open does not read) is refused naming --data; the file is left as it was and the lock released", async () => {
    const data = join(dir, "jobs-damaged.sqlite");
    const first = startCli(["--data", data], ENV);
    try {
      const { restUrl, queueUrl } = await first.ready;
      const endpointId = await idleEndpoint(restUrl, "damaged");
      for (let i = 0; i < 60; i++) {
        const run = await call(queueUrl, "POST", `/v2/${endpointId}/run`, {
          input: { i, pad: "x".repeat(20_000) },
        });
        expect(run.status).toBe(200);
      }
      first.child.kill("SIGTERM");
      expect((await first.exited).code).toBe(0);
    } finally {
      first.kill();
    }
    // The jobs' pages come last in the file: garbled from 60% to 90%, the schema and the management
    // tables at its start stay readable, so the open and its migrations pass and the job scan fails.
    const bytes = readFileSync(data);
    for (let at = Math.floor((bytes.length * 0.6) / 4096) * 4096; at < bytes.length * 0.9; at += 4096) {
      randomBytes(4096).copy(bytes, at);
    }
    writeFileSync(data, bytes);
    for (let attempt = 0; attempt < 2; attempt++) {
      const cli = startCli(["--data", data], ENV);
      const outcome = await Promise.race([cli.exited, cli.ready.then(() => "served" as const)]);
      cli.kill();
      expect(outcome).toEqual({ code: 1, signal: null });
      expect(cli.stderr().trim()).toBe(
        `runpodkit: --data ${data}: the store cannot be opened there: the file is damaged (database disk image is malformed; truncated or overwritten?): the service leaves it as it is; restore it from a backup, or move it and its -wal and -shm files aside to start an empty store`,
      );
      expect(readFileSync(data).equals(bytes)).toBe(true);
      expect(existsSync(`${data}.lock`)).toBe(false);
    }
  }, 60_000);

  it("an empty key file (a key file whose write a full disk or a kill cut short) is replaced: the service starts", async () => {
    const data = join(dir, "empty-key.sqlite");
    writeFileSync(keyFileOf(data), "", { mode: 0o600 });
    const env = { RUNPODKIT_API_KEYS: KEY };
    const cli = startCli(["--data", data], env);
    try {
      const { restUrl } = await cli.ready;
      expect(
        (await call(restUrl, "POST", "/templates", { name: "k", imageName: "x", env: { A: "secret" } }))
          .status,
      ).toBe(200);
      cli.child.kill("SIGTERM");
      expect((await cli.exited).code).toBe(0);
    } finally {
      cli.kill();
    }
    expect(readFileSync(keyFileOf(data), "utf8")).toMatch(/^[0-9a-f]{64}\n$/);
    expect(statSync(keyFileOf(data)).mode & 0o777).toBe(0o600);
    // The key it made is the store's from then on.
    const again = startCli(["--data", data], env);
    try {
      const { restUrl } = await again.ready;
      const list = await call(restUrl, "GET", "/templates");
      expect(list.status).toBe(200);
    } finally {
      again.kill();
      await again.exited;
    }
  }, 60_000);

  const disk = smallDisk("key-disk");
  it.skipIf(disk === null)(
    "a key file the disk has no room for is not made at all, the error names it; once space returns it is made (root: tmpfs)",
    () => {
      const data = join(disk as string, "store.sqlite");
      fillUp(join(disk as string, "filler"));
      for (let attempt = 0; attempt < 2; attempt++) {
        expect(() => openSealer(data)).toThrow(
          new StoreKeyError(
            `key file ${keyFileOf(data)}: it cannot be written: no space left on the device (ENOSPC): free space there and start again`,
          ),
        );
        expect(readdirSync(disk as string)).toEqual(["filler"]);
      }
      rmSync(join(disk as string, "filler"));
      const sealer = openSealer(data);
      expect(sealer.createdFile).toBe(keyFileOf(data));
      expect(sealer.open(sealer.seal("kept"), "a value")).toBe("kept");
      expect(readFileSync(keyFileOf(data), "utf8")).toMatch(/^[0-9a-f]{64}\n$/);
      expect(readdirSync(disk as string).sort()).toEqual(["store.sqlite.key"]);
    },
  );
});

describe("the address file on a full disk", () => {
  const disk = smallDisk("address-disk");
  it.skipIf(disk === null)(
    "is not written, and leaves no temporary file beside the store (root: tmpfs)",
    () => {
      const data = join(disk as string, "store.sqlite");
      fillUp(join(disk as string, "filler"));
      const address = {
        pid: process.pid,
        restUrl: "http://127.0.0.1:1/v1",
        graphqlUrl: "http://127.0.0.1:1/graphql",
        queueUrl: "http://127.0.0.1:1",
      };
      for (let attempt = 0; attempt < 2; attempt++) {
        expect(() => writeServiceAddress(data, address)).toThrow(/ENOSPC/);
        expect(readdirSync(disk as string)).toEqual(["filler"]);
      }
      rmSync(join(disk as string, "filler"));
      writeServiceAddress(data, address);
      expect(readdirSync(disk as string)).toEqual(["store.sqlite.address.json"]);
    },
  );
});

/** Writes `path` until the disk holding it has no room left (ENOSPC). */
function fillUp(path: string): void {
  const chunk = Buffer.alloc(4096);
  try {
    for (;;) appendFileSync(path, chunk);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOSPC") throw error;
  }
}
