import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { entriesOf } from "./support";

/**
 * `runpodkit serve` listens on a free port by default; `runpodkit logs` finds it from the address
 * the service writes beside its store (the default store of the directory both run in, or --data),
 * through the real CLI in processes of their own.
 */

const LOADER = `file://${resolve("node_modules/tsx/dist/loader.mjs")}`;
const CLI = resolve("service/main.ts");
const KEY = "rpk_address_test_key_0123456789";

const children: ChildProcess[] = [];
const dirs: string[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill("SIGKILL");
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function run(cwd: string, args: string[], env: Record<string, string> = {}) {
  const child = spawn(process.execPath, ["--import", LOADER, CLI, ...args], {
    cwd,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
  });
  children.push(child);
  const seen = { stdout: "", stderr: "" };
  child.stdout.on("data", (chunk) => {
    seen.stdout += String(chunk);
  });
  child.stderr.on("data", (chunk) => {
    seen.stderr += String(chunk);
  });
  const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)));
  return { child, seen, exited };
}

/** A plain `runpodkit serve` (free port) in `cwd`; resolves with its ready line's URLs. */
async function serve(cwd: string, args: string[] = []) {
  const service = run(cwd, ["serve", ...args], { RUNPODKIT_API_KEYS: KEY });
  const urls = await new Promise<{ restUrl: string; queueUrl: string }>((done, fail) => {
    service.child.stdout.on("data", () => {
      const match = service.seen.stdout.match(/rest=(\S+) graphql=\S+ queue=(\S+)\n/);
      if (match) done({ restUrl: match[1] ?? "", queueUrl: match[2] ?? "" });
    });
    void service.exited.then((code) => fail(new Error(`serve exited ${code}: ${service.seen.stderr}`)));
  });
  return { ...service, ...urls };
}

/** An endpoint of the echo handler with one job run, so its worker has printed lines. */
async function endpointWithLines(restUrl: string, queueUrl: string): Promise<string> {
  const post = async (url: string, body: object) => {
    const reply = await fetch(url, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    expect(reply.status).toBeLessThan(300);
    return (await reply.json()) as { id: string; status?: string };
  };
  const template = await post(`${restUrl}/templates`, {
    name: "addr",
    imageName: "runpodkit/echo",
    isServerless: true,
  });
  const endpoint = await post(`${restUrl}/endpoints`, {
    templateId: template.id,
    name: "addr",
    workersMax: 1,
  });
  const job = await post(`${queueUrl}/v2/${endpoint.id}/runsync`, { input: { hello: 1 } });
  expect(job.status).toBe("COMPLETED");
  return endpoint.id;
}

const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "runpodkit-address-"));
  dirs.push(dir);
  return dir;
};

describe("runpodkit logs finds the service runpodkit serve started on a free port", () => {
  it("in the same directory (the default store), and with --data; the address file holds no key and goes with the service", async () => {
    const cwd = tempDir();
    const service = await serve(cwd);
    const endpointId = await endpointWithLines(service.restUrl, service.queueUrl);
    const address = join(cwd, ".data", "runpodkit.sqlite.address.json");
    const text = readFileSync(address, "utf8");
    expect(JSON.parse(text)).toEqual({
      pid: service.child.pid,
      queueUrl: service.queueUrl,
      restUrl: service.restUrl,
      graphqlUrl: service.queueUrl.replace(/$/, "/graphql"),
    });
    expect(text).not.toContain(KEY);
    expect(statSync(address).mode & 0o777).toBe(0o600);

    // No --url, no RUNPOD_BASE_URL: the address beside the default store.
    const logs = run(cwd, ["logs", endpointId, "--json"], { RUNPOD_API_KEY: KEY });
    expect(await logs.exited).toBe(0);
    expect(logs.seen.stderr).toBe("");
    expect(entriesOf(logs.seen.stdout).length).toBeGreaterThan(0);
    // From elsewhere, naming the store.
    const elsewhere = run(tempDir(), ["logs", endpointId, "--data", join(cwd, ".data", "runpodkit.sqlite")], {
      RUNPOD_API_KEY: KEY,
    });
    expect(await elsewhere.exited).toBe(0);
    expect(elsewhere.seen.stdout.trim().split("\n").length).toBe(entriesOf(logs.seen.stdout).length);
    expect(elsewhere.seen.stdout + elsewhere.seen.stderr).not.toContain(KEY);
    // --url still names the service itself.
    const named = run(tempDir(), ["logs", endpointId, "--url", `${service.queueUrl}/v2`], {
      RUNPOD_API_KEY: KEY,
    });
    expect(await named.exited).toBe(0);
    expect(named.seen.stderr).toBe("");

    // A graceful stop removes the address.
    service.child.kill("SIGTERM");
    expect(await service.exited).toBe(0);
    expect(() => statSync(address)).toThrow();
  });

  it("with no service running there it says so and how to point it, then tries 8080; a stale address is not used", async () => {
    const cwd = tempDir();
    const none = run(cwd, ["logs", "ep1"], { RUNPOD_API_KEY: KEY });
    await none.exited;
    expect(none.seen.stderr).toContain(`no service is running on ${join(cwd, ".data", "runpodkit.sqlite")}`);
    expect(none.seen.stderr).toContain("trying http://127.0.0.1:8080/v2");
    expect(none.seen.stderr).toContain("--url");
    // An address whose process is gone (a killed service): not followed.
    const store = join(cwd, "s.sqlite");
    writeFileSync(
      `${store}.address.json`,
      JSON.stringify({
        pid: 2 ** 22 + 17,
        queueUrl: "http://127.0.0.1:1",
        restUrl: "http://127.0.0.1:1/v1",
        graphqlUrl: "http://127.0.0.1:1/graphql",
      }),
      // As the service writes it: a file others may write is refused as untrusted, whatever the umask.
      { mode: 0o600 },
    );
    const stale = run(cwd, ["logs", "ep1", "--data", store], { RUNPOD_API_KEY: KEY });
    await stale.exited;
    expect(stale.seen.stderr).toContain("is no longer running");
    expect(stale.seen.stderr).toContain("trying http://127.0.0.1:8080/v2");
    const both = run(cwd, ["logs", "ep1", "--data", store, "--url", "http://127.0.0.1:1/v2"], {
      RUNPOD_API_KEY: KEY,
    });
    expect(await both.exited).toBe(1);
    expect(both.seen.stderr).toContain("give --url or --data, not both");
  });
});
