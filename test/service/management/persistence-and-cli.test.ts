import { type ChildProcess, execFileSync, type SpawnOptions, spawn } from "node:child_process";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { type AddressInfo, createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { Endpoint } from "../../../sdk/schemas/endpoint";
import type { Template } from "../../../sdk/schemas/template";
import { withService } from "../../helpers/service";
import { alive } from "../security/cli";
import { clients } from "./client";

const dir = mkdtempSync(join(tmpdir(), "runpodkit-mgmt-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("persistence", () => {
  it("keeps every resource across a restart on the same file", async () => {
    const data = join(dir, "store.sqlite");
    const first = await withService({ data });
    const api1 = clients(first);
    const template = (
      await api1.rest<Template>("POST", "/templates", { name: "kept", imageName: "img", isServerless: true })
    ).body;
    const endpoint = (
      await api1.rest<Endpoint>("POST", "/endpoints", { templateId: template.id, workersMax: 1 })
    ).body;
    const volume = (
      await api1.rest<{ id: string }>("POST", "/networkvolumes", {
        name: "v",
        size: 5,
        dataCenterId: "EU-RO-1",
      })
    ).body;
    await api1.gql(`mutation { saveRegistryAuth(input: {name: "r", username: "u", password: "p"}) { id } }`);
    await first.close();

    const second = await withService({ data });
    const api2 = clients(second);
    expect((await api2.rest("GET", `/endpoints/${endpoint.id}`)).body).toEqual(endpoint);
    expect((await api2.rest("GET", `/templates/${template.id}`)).body).toEqual(template);
    expect((await api2.rest("GET", `/networkvolumes/${volume.id}`)).status).toBe(200);
    expect(
      (await api2.rest<{ name: string }[]>("GET", "/containerregistryauth")).body.map((a) => a.name),
    ).toEqual(["r"]);
    // Rules still hold on the reopened store.
    expect((await api2.rest("POST", "/templates", { name: "kept", imageName: "img" })).status).toBe(400);
    expect((await api2.rest("DELETE", `/templates/${template.id}`)).status).toBe(400);
    // The other account still sees nothing.
    expect((await api2.rest("GET", "/endpoints", undefined, second.otherApiKey)).body).toEqual([]);
    await second.close();
  });
});

describe("lists stored before they were kept canonical", () => {
  it("read canonical after the next start, on REST and GraphQL: the store rewrites them once", async () => {
    const data = join(dir, "old-lists.sqlite");
    const first = await withService({ data });
    const api1 = clients(first);
    const template = (
      await api1.rest<Template>("POST", "/templates", {
        name: "old",
        imageName: "img",
        isServerless: true,
        env: { TOKEN: "sealed" },
      })
    ).body;
    const endpoint = (
      await api1.rest<Endpoint>("POST", "/endpoints", {
        templateId: template.id,
        gpuTypeIds: ["NVIDIA A40", "NVIDIA RTX A6000"],
        dataCenterIds: ["EU-RO-1", "US-TX-3"],
      })
    ).body;
    await first.close();

    // The documents as a store of the version before wrote them: items repeated and untrimmed.
    const db = new DatabaseSync(data);
    const edit = (table: string, id: string, change: (doc: Record<string, unknown>) => object) => {
      const row = db.prepare(`SELECT data FROM ${table} WHERE id = ?`).get(id) as { data: string };
      const doc = JSON.parse(row.data) as Record<string, unknown>;
      db.prepare(`UPDATE ${table} SET data = ? WHERE id = ?`).run(JSON.stringify(change(doc)), id);
    };
    edit("mgmt_endpoints", endpoint.id, (doc) => ({
      ...doc,
      gpuIds: "AMPERE_48, AMPERE_48",
      gpuTypeIds: ["NVIDIA A40", "NVIDIA A40", "NVIDIA RTX A6000"],
      dataCenterIds: ["EU-RO-1", "US-TX-3", "EU-RO-1"],
      locations: " RO , US,RO",
      allowedCudaVersions: ["12.4", "12.4"],
    }));
    edit("mgmt_templates", template.id, (doc) => ({ ...doc, ports: ["8888/http", "22/tcp", "8888/http"] }));
    db.exec("DROP TABLE IF EXISTS mgmt_pending_rewrites");
    db.prepare("DELETE FROM migrations WHERE name = ?").run("management-007-pending-rewrites");
    db.close();

    const second = await withService({ data });
    const api2 = clients(second);
    const rest = await api2.rest<Endpoint>("GET", `/endpoints/${endpoint.id}`);
    expect(rest.body).toMatchObject({
      gpuTypeIds: ["NVIDIA A40", "NVIDIA RTX A6000"],
      dataCenterIds: ["EU-RO-1", "US-TX-3"],
      allowedCudaVersions: ["12.4"],
    });
    const gql = await api2.gql<{ myself: { endpoint: { gpuIds: string; locations: string } } }>(
      `{ myself { endpoint(id: "${endpoint.id}") { gpuIds locations } } }`,
    );
    expect(gql.body.data?.myself.endpoint).toEqual({ gpuIds: "AMPERE_48", locations: "RO,US" });
    expect((await api2.rest<Template>("GET", `/templates/${template.id}`)).body).toMatchObject({
      ports: ["8888/http", "22/tcp"],
      env: { TOKEN: "sealed" },
    });
    await second.close();
    // Rewritten on disk, and not pending any more.
    const after = new DatabaseSync(data);
    const stored = after.prepare("SELECT data FROM mgmt_endpoints WHERE id = ?").get(endpoint.id) as {
      data: string;
    };
    expect(JSON.parse(stored.data)).toMatchObject({ gpuIds: "AMPERE_48", locations: "RO,US" });
    expect(after.prepare("SELECT name FROM mgmt_pending_rewrites").all()).toEqual([]);
    after.close();
  });
});

function waitForLine(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = "";
    let err = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const newline = out.indexOf("\n");
      if (newline >= 0) resolve(out.slice(0, newline));
    });
    child.stderr?.on("data", (chunk: Buffer) => {
      err += chunk.toString();
    });
    child.once("exit", (code) => reject(new Error(`CLI exited (${code}) before its ready line: ${err}`)));
  });
}

/**
 * Every CLI process a test starts, SIGKILLed after that test whatever happened: a regression that
 * starts the service where a refusal was expected (or a test failing before its own kill) must not
 * leave a service listening past its test, or the run hanging on it.
 */
const started = new Set<ChildProcess>();
afterEach(async () => {
  await Promise.all(
    [...started].map(async (child) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGKILL");
      await exited;
    }),
  );
  started.clear();
});

/** `spawn`, the process kept in `started` (killed after the test). */
function spawnCli(command: string, args: string[], options: SpawnOptions): ChildProcess {
  const child = spawn(command, args, options);
  started.add(child);
  return child;
}

/** The CLI as `npm run serve` runs it (tsx), in this very Node, so a signal reaches main.ts itself. */
function startCli(keys: string[], ...extra: string[]): ChildProcess {
  return startCliCommand([], keys, ...extra);
}

/** The same, with words before the flags (a command: `serve`, or anything a user may type). */
function startCliCommand(words: string[], keys: string[], ...extra: string[]): ChildProcess {
  const keyFlags = keys.flatMap((key) => ["--api-key", key]);
  return spawnCli(
    process.execPath,
    [
      "--import",
      "tsx",
      "service/main.ts",
      ...words,
      "--port",
      "0",
      ...keyFlags,
      "--data",
      ":memory:",
      ...extra,
    ],
    { cwd: process.cwd(), stdio: ["ignore", "pipe", "pipe"] },
  );
}

/** Whether a user other than the owner can reach `dir`: every directory up to / lets others through. */
function othersCanReach(dir: string): boolean {
  for (let at = dir; ; at = dirname(at)) {
    if ((statSync(at).mode & 0o001) === 0) return false;
    if (at === dirname(at)) return true;
  }
}

/**
 * How a CLI process that is expected to refuse its arguments ended: its exit code and its stderr.
 * Rejects at its ready line: a service that started is not waited for until the test's timeout.
 */
function exitOf(child: ChildProcess): Promise<{ code: number | null; stderr: string }> {
  let stdout = "";
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return new Promise((resolve, reject) => {
    child.stdout?.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
      const ready = stdout.split("\n").find((line) => line.startsWith("runpodkit service ready:"));
      if (ready !== undefined) reject(new Error(`the CLI started where it was to exit: ${ready}\n${stderr}`));
    });
    child.once("exit", (code) => resolve({ code, stderr }));
  });
}

describe("CLI", () => {
  it("prints one line with the three base URLs, serves them, and closes on SIGTERM", async () => {
    const key = "cli-test-key-42";
    const child = startCli([key, "cli-key-2"]);
    const stdout: string[] = [];
    child.stdout?.on("data", (chunk: Buffer) => stdout.push(chunk.toString()));
    try {
      const line = await waitForLine(child);
      const match = line.match(/rest=(\S+) graphql=(\S+) queue=(\S+)/);
      expect(match).not.toBeNull();
      const [, restUrl, graphqlUrl, queueUrl] = match ?? [];
      expect(restUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
      expect(graphqlUrl).toBe(`${queueUrl}/graphql`);
      expect(line).not.toContain(key);

      const rest = await fetch(`${restUrl}/endpoints`, { headers: { authorization: `Bearer ${key}` } });
      expect(rest.status).toBe(200);
      expect(await rest.json()).toEqual([]);
      const gql = await fetch(`${graphqlUrl}?api_key=${key}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ query: "{ myself { endpoints { id } } }" }),
      });
      expect(await gql.json()).toEqual({ data: { myself: { endpoints: [] } } });
      const jobs = await fetch(`${queueUrl}/v2/nosuchendpoint/health`, { headers: { authorization: key } });
      expect(jobs.status).toBeGreaterThanOrEqual(200);

      const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
      child.kill("SIGTERM");
      expect(await exited).toBe(0);
      expect(stdout.join("").trim().split("\n")).toHaveLength(1);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    }
  });
});

describe("CLI refusal tests when the CLI starts instead", () => {
  // The two run in order: the second checks what the first left after its afterEach.
  let pid: number | undefined;
  it("fail at the ready line, not at the test's timeout", async () => {
    // Flags the CLI takes: a refusal test whose refusal regressed gets exactly this.
    const child = startCli(["k-guard"]);
    pid = child.pid;
    // Before, exitOf waited for an exit that never came, 30 s, with the service listening.
    await expect(exitOf(child)).rejects.toThrow(
      "the CLI started where it was to exit: runpodkit service ready:",
    );
  });

  it("leave no CLI running after their test", () => {
    expect(pid).toBeGreaterThan(0);
    // Before, nothing killed it: it served until the test run ended, and kept it from ending.
    expect(alive(pid ?? 0)).toBe(false);
  });
});

describe("CLI --port", () => {
  it("a port another process listens on is refused, saying so and what to do", async () => {
    const other = createServer();
    await new Promise<void>((resolve) => other.listen(0, "127.0.0.1", resolve));
    const { port } = other.address() as AddressInfo;
    try {
      // The later --port wins over startCli's "--port 0".
      const child = startCli(["k-port"], "--port", String(port));
      const { code, stderr } = await exitOf(child);
      expect(code).toBe(1);
      expect(stderr).toContain(
        `runpodkit: listen EADDRINUSE: address already in use 127.0.0.1:${port} (another process listens there: choose another --port; 0 picks a free one)`,
      );
    } finally {
      other.close();
    }
  });
});

describe("CLI --port values", () => {
  // "": an unset $PORT in --port=$PORT, once read as 0 (a free port, where no client looks); the
  // others Number() read as ports (16, 1000, 80).
  it.each(["99999", "-1", "abc", "80.5", "", "0x10", "1e3", " 80"])(
    "refuses %j, naming the flag and its range",
    async (value) => {
      const { code, stderr } = await exitOf(startCli(["k-port"], `--port=${value}`));
      expect(code).toBe(1);
      expect(stderr).toContain(
        `runpodkit: --port: expected a whole number from 0 to 65535 (0 picks a free one), got "${value}"`,
      );
    },
  );
});

describe("CLI --host values", () => {
  // A name is looked up (ENOTFOUND, or EAI_AGAIN where no resolver answers); an address must be this machine's.
  it.each([
    ["0.0.0.0:8080", /getaddrinfo (ENOTFOUND|EAI_AGAIN) 0\.0\.0\.0:8080/],
    ["[::1]", /getaddrinfo (ENOTFOUND|EAI_AGAIN) \[::1\]/],
    ["192.0.2.1", /listen EADDRNOTAVAIL: address not available 192\.0\.2\.1/],
  ])("%s: refused, saying what --host takes", async (host, error) => {
    const { code, stderr } = await exitOf(startCli(["k-host"], "--host", host));
    expect(code).toBe(1);
    const line = stderr.split("\n").find((l) => l.startsWith("runpodkit: ") && !l.includes("warning:")) ?? "";
    expect(line).toMatch(error);
    expect(line).toContain(
      " (--host is an address or name of this machine to listen on, e.g. 127.0.0.1, ::1 or 0.0.0.0, without brackets or a port: the port is --port)",
    );
  });
});

describe("CLI --max-workers", () => {
  it.each(["0", "-1", "1.5", "abc", "4097"])("refuses %s, naming the flag and its range", async (value) => {
    const { code, stderr } = await exitOf(startCli(["k-max"], `--max-workers=${value}`));
    expect(code).toBe(1);
    expect(stderr).toContain(
      `runpodkit: --max-workers: expected a whole number from 1 to 4096, got "${value}"`,
    );
  });

  it("bounds the worker processes over every endpoint: a workersMin of 3 gets 1, and the log says why", async () => {
    const key = "k-max-workers";
    const child = startCli([key], "--max-workers", "1");
    let stderr = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    try {
      const [, restUrl, , queueUrl] =
        (await waitForLine(child)).match(/rest=(\S+) graphql=(\S+) queue=(\S+)/) ?? [];
      const post = async <T>(path: string, body: unknown) =>
        (await (
          await fetch(`${restUrl}${path}`, {
            method: "POST",
            headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
            body: JSON.stringify(body),
          })
        ).json()) as T;
      const template = await post<Template>("/templates", {
        name: "t",
        imageName: "runpodkit/echo:1",
        isServerless: true,
      });
      const endpoint = await post<Endpoint>("/endpoints", {
        name: "e",
        templateId: template.id,
        workersMin: 3,
        workersMax: 3,
      });
      const health = async () =>
        (await (
          await fetch(`${queueUrl}/v2/${endpoint.id}/health`, { headers: { authorization: key } })
        ).json()) as {
          workers: { idle: number; initializing: number; running: number };
        };
      await expect.poll(async () => (await health()).workers.idle, { timeout: 30_000 }).toBe(1);
      await expect
        .poll(() => stderr, { timeout: 10_000 })
        .toContain("its bound (--max-workers, config.jobs.maxWorkers: 1)");
      const { workers } = await health();
      expect(workers.idle + workers.initializing + workers.running).toBe(1);
    } finally {
      child.kill("SIGKILL");
    }
  });
});

describe("CLI --data", () => {
  it("refuses a file that is not a SQLite database, naming it, and leaves it as it was", async () => {
    const notes = join(dir, "notes.txt");
    writeFileSync(notes, "my notes\n", { mode: 0o644 });
    chmodSync(notes, 0o644);
    const { code, stderr } = await exitOf(startCli(["k-data"], "--data", notes));
    expect(code).toBe(1);
    expect(stderr).toContain(
      `runpodkit: --data ${notes}: the store cannot be opened there: it is not a SQLite database (the store is a SQLite file the service creates, or :memory:)`,
    );
    expect(readFileSync(notes, "utf8")).toBe("my notes\n");
    expect(statSync(notes).mode & 0o777).toBe(0o644);
    expect(existsSync(`${notes}.key`)).toBe(false);
  });

  /**
   * Each unusable --data fails at once, exit code 1, one line naming --data and the reason (no stack
   * trace). Under /proc, Node's recursive mkdir looped forever on ENOENT: the CLI hung. The kill is
   * cleanup only, should one hang again; the test's timeout reports it.
   */
  it.each([
    [
      "under /proc",
      () => "/proc/runpodkit-no-such/db.sqlite",
      "/proc is a kernel file system, not storage: give a file on a disk (or :memory: to keep nothing)",
    ],
    [
      "under /sys",
      () => "/sys/runpodkit-no-such/db.sqlite",
      "/sys is a kernel file system, not storage: give a file on a disk (or :memory: to keep nothing)",
    ],
    [
      "a directory",
      () => {
        const at = join(dir, "a-directory");
        mkdirSync(at, { recursive: true });
        return at;
      },
      `it is a directory, not a file: give the path of a file to create or reuse (e.g. ${join(dir, "a-directory", "runpodkit.sqlite")})`,
    ],
    [
      "a path through a regular file",
      () => {
        writeFileSync(join(dir, "a-file"), "");
        return join(dir, "a-file", "deeper", "store.sqlite");
      },
      `${join(dir, "a-file")} is a regular file, not a directory, so nothing can be created under it`,
    ],
    [
      "a FIFO",
      () => {
        const fifo = join(dir, "a-fifo");
        if (!existsSync(fifo)) execFileSync("mkfifo", [fifo]);
        return fifo;
      },
      "it is a FIFO (named pipe), not a file: give the path of a file to create or reuse",
    ],
  ])("refuses --data %s at once, naming --data and why", async (_what, path, reason) => {
    const data = path();
    const child = startCli(["k-data"], "--data", data);
    const guard = setTimeout(() => child.kill("SIGKILL"), 30_000);
    try {
      const { code, stderr } = await exitOf(child);
      expect(code).toBe(1);
      // The one line after startCli's --api-key warning: no stack trace.
      expect(stderr.split("\n").filter((line) => !line.includes("warning: --api-key"))).toEqual([
        `runpodkit: --data ${data}: the store cannot be opened there: ${reason}`,
        "",
      ]);
    } finally {
      clearTimeout(guard);
    }
  });

  // root writes anywhere: the CLI then runs as nobody, which needs to reach this checkout (a clone in
  // a private mktemp directory it cannot: skipped there).
  const asRoot = process.getuid?.() === 0;
  it.skipIf(asRoot && !othersCanReach(process.cwd()))(
    "refuses --data in a directory its user may not write, saying so (as another user when run as root)",
    async () => {
      const shared = mkdtempSync(join(tmpdir(), "runpodkit-ro-"));
      try {
        const readOnly = join(shared, "read-only");
        mkdirSync(readOnly);
        chmodSync(shared, 0o755);
        chmodSync(readOnly, 0o555);
        for (const [data, reason] of [
          [
            join(readOnly, "store.sqlite"),
            "permission denied: the service's user may not write there (EACCES): give a file where it may (or :memory: to keep nothing)",
          ],
          [
            join(readOnly, "sub", "store.sqlite"),
            `the directory ${join(readOnly, "sub")} cannot be created: permission denied: the service's user may not write there (EACCES): give a file where it may (or :memory: to keep nothing)`,
          ],
        ] as const) {
          const child = spawnCli(
            process.execPath,
            ["--import", "tsx", "service/main.ts", "--port", "0", "--data", data],
            {
              cwd: process.cwd(),
              stdio: ["ignore", "pipe", "pipe"],
              env: { PATH: process.env.PATH ?? "", RUNPODKIT_API_KEYS: "k-ro", HOME: shared },
              ...(asRoot ? { uid: 65534, gid: 65534 } : {}),
            },
          );
          const { code, stderr } = await exitOf(child);
          expect(code).toBe(1);
          expect(stderr).toBe(`runpodkit: --data ${data}: the store cannot be opened there: ${reason}\n`);
        }
      } finally {
        rmSync(shared, { recursive: true, force: true });
      }
    },
  );

  it("creates missing directories of --data private (0700), and leaves an existing one as it is", async () => {
    const data = join(dir, "new", "deeper", "store.sqlite");
    const child = startCli(["k-data"], "--data", data);
    try {
      await waitForLine(child);
      expect(statSync(join(dir, "new")).mode & 0o777).toBe(0o700);
      expect(statSync(join(dir, "new", "deeper")).mode & 0o777).toBe(0o700);
      expect(statSync(data).isFile()).toBe(true);
    } finally {
      child.kill("SIGTERM");
      await new Promise((resolve) => child.once("exit", resolve));
    }
  });
});

describe("CLI SIGHUP", () => {
  it("the terminal closing (SIGHUP) stops the service as SIGTERM does: exit 0, the WAL truncated, the address file removed, the store whole", async () => {
    const data = join(dir, "hup", "store.sqlite");
    const child = startCli(["k-hup"], "--data", data);
    let restUrl = "";
    try {
      [, restUrl = ""] = (await waitForLine(child)).match(/rest=(\S+)/) ?? [];
      const created = await fetch(`${restUrl}/templates`, {
        method: "POST",
        headers: { authorization: "Bearer k-hup", "content-type": "application/json" },
        body: JSON.stringify({ name: "kept-over-hup", imageName: "runpodkit/echo:1.0", isServerless: true }),
      });
      expect(created.status).toBe(200);
      expect(existsSync(`${data}.address.json`)).toBe(true);
      const exited = new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
        child.once("exit", (code, signal) => resolve([code, signal])),
      );
      child.kill("SIGHUP");
      // Before, Node's default for SIGHUP: [null, "SIGHUP"], with the WAL and the address file left.
      expect(await exited).toEqual([0, null]);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    }
    // Closed as a graceful stop closes it: the WAL copied back (SQLite removes it at the last close).
    expect(existsSync(`${data}-wal`) ? statSync(`${data}-wal`).size : 0).toBe(0);
    expect(existsSync(`${data}.address.json`)).toBe(false);
    const again = startCli(["k-hup"], "--data", data);
    try {
      const [, url] = (await waitForLine(again)).match(/rest=(\S+)/) ?? [];
      const templates = await fetch(`${url}/templates`, { headers: { authorization: "Bearer k-hup" } });
      expect(((await templates.json()) as Template[]).map((t) => t.name)).toEqual(["kept-over-hup"]);
    } finally {
      again.kill("SIGTERM");
      await new Promise((resolve) => again.once("exit", resolve));
    }
  });
});

describe("CLI serve", () => {
  it("`runpodkit serve ...` serves as `runpodkit ...` does (the examples' spelling)", async () => {
    const child = startCliCommand(["serve"], ["k-serve"]);
    try {
      const line = await waitForLine(child);
      const [, restUrl] = line.match(/rest=(\S+) graphql=(\S+) queue=(\S+)/) ?? [];
      const rest = await fetch(`${restUrl}/endpoints`, { headers: { authorization: "Bearer k-serve" } });
      expect(rest.status).toBe(200);
    } finally {
      child.kill("SIGKILL");
    }
  });

  it("`npm run serve` stopped with SIGTERM (a script's `kill $!`) stops the service too", async () => {
    // npm signals only its own child: before the script exec'd tsx, that child was `sh -c`, which
    // died and left the service listening, reparented to init.
    const marker = `k-npm-serve-${process.pid}-${Date.now()}`;
    const npm = spawn(
      "npm",
      ["run", "serve", "--", "--port", "0", "--api-key", marker, "--data", ":memory:"],
      {
        cwd: process.cwd(),
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    try {
      const ready = await new Promise<string>((resolve, reject) => {
        let out = "";
        npm.stdout?.on("data", (chunk: Buffer) => {
          out += chunk.toString();
          const line = out.split("\n").find((l) => l.startsWith("runpodkit service ready:"));
          if (line !== undefined) resolve(line);
        });
        npm.once("exit", (code) => reject(new Error(`npm run serve exited (${code}) before its ready line`)));
      });
      const queueUrl = ready.match(/queue=(\S+)/)?.[1];
      expect((await fetch(`${queueUrl}/health`)).status).toBeLessThan(500);
      const exited = new Promise((resolve) => npm.once("exit", resolve));
      npm.kill("SIGTERM");
      await exited;
      // npm has exited: the service must not be listening any more.
      const after = await fetch(`${queueUrl}/health`).then(
        () => "still listening",
        (error: unknown) => (error as { cause?: { code?: string } }).cause?.code ?? String(error),
      );
      expect(after).toBe("ECONNREFUSED");
    } finally {
      npm.kill("SIGKILL");
      // Whatever it left behind (the old script's orphan) goes too.
      spawn("pkill", ["-f", marker], { stdio: "ignore" });
    }
  });

  it("refuses any other word before the flags, with the usage", async () => {
    const child = startCliCommand(["server"], ["k-serve"]);
    const { code, stderr } = await exitOf(child);
    expect(code).toBe(1);
    expect(stderr).toContain("Unexpected argument 'server'");
    expect(stderr).toContain("usage: RUNPODKIT_API_KEYS=<k1>,<k2> runpodkit [serve] [--port <p>]");
  });
});

describe("CLI --help", () => {
  it("says what --handler maps, which images are built in, what runs any other, and where the store's key comes from", async () => {
    const child = startCliCommand([], [], "--help");
    let stdout = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    const { code } = await exitOf(child);
    expect(code).toBe(0);
    expect(stdout).toContain(
      "--handler: runs a template's image (exact name, else without its tag) as a module",
    );
    expect(stdout).toContain(
      "Built in: runpodkit/echo, runpodkit/sleep, runpodkit/fail, runpodkit/stream, runpodkit/misbehave; any other image runs runpodkit/echo.",
    );
    expect(stdout).toContain(
      "RUNPODKIT_STORE_KEY: the key sealing the store's secrets (default: the key file <store>.key",
    );
  });
});

describe("CLI --version", () => {
  it("prints the package's version and starts nothing", async () => {
    const manifest = JSON.parse(readFileSync("package.json", "utf8")) as { version: string };
    const child = startCliCommand([], [], "--version");
    let stdout = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    const { code, stderr } = await exitOf(child);
    expect({ code, stdout, stderr }).toEqual({
      code: 0,
      stdout: `runpodkit ${manifest.version}\n`,
      stderr: "",
    });
  });
});

describe("CLI --handler", () => {
  it("runs a template's image with the handler module the flag maps it to", async () => {
    const child = startCli(["k-handler"], "--handler", "acme/upper=examples/handlers/uppercase.ts");
    try {
      const line = await waitForLine(child);
      const [, restUrl, , queueUrl] = line.match(/rest=(\S+) graphql=(\S+) queue=(\S+)/) ?? [];
      const headers = { authorization: "Bearer k-handler", "content-type": "application/json" };
      const post = async (url: string, body: unknown) =>
        (await fetch(url, { method: "POST", headers, body: JSON.stringify(body) })).json();
      const template = (await post(`${restUrl}/templates`, {
        name: "upper",
        imageName: "acme/upper:1.0",
        isServerless: true,
      })) as { id: string };
      const endpoint = (await post(`${restUrl}/endpoints`, {
        templateId: template.id,
        workersMin: 1,
        workersMax: 1,
      })) as { id: string };
      const result = await post(`${queueUrl}/v2/${endpoint.id}/runsync?wait=60000`, {
        input: { text: "hi" },
      });
      expect(result).toMatchObject({ status: "COMPLETED", output: { text: "HI" } });
    } finally {
      child.kill("SIGKILL");
    }
  }, 90_000);

  it("refuses a malformed mapping, naming the flag", async () => {
    const child = startCli(["k-handler"], "--handler", "no-equals-sign");
    const { code, stderr } = await exitOf(child);
    expect(code).toBe(1);
    expect(stderr).toContain("--handler expects <image>=<module-or-command>");
  });
});

describe("names stored before they were trimmed and composed", () => {
  it("are one name with their canonical spelling: a registry auth's and a template's uniqueness, deleteTemplate", async () => {
    const data = join(dir, "legacy-names.sqlite");
    const first = await withService({ data });
    const api1 = clients(first);
    const auth = await api1.rest<{ id: string }>("POST", "/containerregistryauth", {
      name: "legacy",
      username: "u",
      password: "p",
    });
    const template = await api1.rest<{ id: string }>("POST", "/templates", { name: "old", imageName: "img" });
    await first.close();
    // As a version before the rule stored " legacy " and "old" with a decomposed accent.
    const db = new DatabaseSync(data);
    db.prepare(
      "UPDATE mgmt_registry_auths SET name = ?, data = json_set(data, '$.name', ?) WHERE id = ?",
    ).run(" legacy ", " legacy ", auth.body.id);
    db.prepare("UPDATE mgmt_templates SET name = ?, data = json_set(data, '$.name', ?) WHERE id = ?").run(
      "cafe\u0301",
      "cafe\u0301",
      template.body.id,
    );
    db.close();

    const second = await withService({ data });
    const api2 = clients(second);
    try {
      expect(
        (await api2.rest<{ name: string }>("GET", `/containerregistryauth/${auth.body.id}`)).body.name,
      ).toBe(" legacy ");
      const taken = await api2.rest<{ code: string; field: string }>("POST", "/containerregistryauth", {
        name: "legacy",
        username: "u",
        password: "p",
      });
      expect([taken.status, taken.body.code, taken.body.field]).toEqual([400, "CONFLICT", "name"]);
      const templateTaken = await api2.rest<{ code: string }>("POST", "/templates", {
        name: "caf\u00e9",
        imageName: "img",
      });
      expect([templateTaken.status, templateTaken.body.code]).toEqual([400, "CONFLICT"]);
      const deleted = await api2.gql(`mutation { deleteTemplate(templateName: "caf\u00e9") }`);
      expect(deleted.body.errors).toBeUndefined();
      expect((await api2.rest("GET", `/templates/${template.body.id}`)).status).toBe(404);
    } finally {
      await second.close();
    }
  });
});
