import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { readApiKeys, redactKey } from "../../../service/api-keys";
import { Accounts, accountIdOf, bareKey, sameKey } from "../../../service/edge/auth";
import { redactUrl } from "../../../service/edge/errors";
import type { Dispatcher, WorkerSession } from "../../../service/jobs/dispatch/dispatcher";
import { WorkerAccess } from "../../../service/jobs/dispatch/worker-access";
import type { EndpointDirectory } from "../../../service/planes";
import { type Cli, startCli } from "./cli";

const dir = mkdtempSync(join(tmpdir(), "runpodkit-keys-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const KEY_A = "rpk_env_alpha_0123456789abcdef";
const KEY_B = "rpk_env_beta_fedcba9876543210";

async function accountSees(cli: Cli, key: string): Promise<number> {
  const { restUrl } = await cli.ready;
  const reply = await fetch(`${restUrl}/endpoints`, { headers: { authorization: `Bearer ${key}` } });
  return reply.status;
}

describe("a credential's key", () => {
  it("is the raw key, or an Authorization value without its Bearer prefix and surrounding space", () => {
    expect(bareKey("rpk_abc")).toBe("rpk_abc");
    expect(bareKey("Bearer rpk_abc")).toBe("rpk_abc");
    expect(bareKey("Bearer  rpk_abc")).toBe("rpk_abc");
    expect(bareKey("Bearer \u00a0rpk_abc")).toBe("rpk_abc");
    expect(bareKey("Bearer b")).toBe("b");
    expect(bareKey("bearer \t rpk_abc ")).toBe("rpk_abc");
    expect(bareKey("  rpk_abc")).toBe("rpk_abc");
    expect(bareKey("rpk_abc\u00a0")).toBe("rpk_abc");
    // A raw key starting with b is still a raw key; only "Bearer" and space make a prefix.
    expect(bareKey("bkey_1")).toBe("bkey_1");
    expect(bareKey("Bearerkey")).toBe("Bearerkey");
    expect(bareKey("")).toBe("");
    const accounts = new Accounts(["rpk_abc", "bkey_1"]);
    expect(accounts.resolve("Bearer rpk_abc")).toBe(accountIdOf("rpk_abc"));
    expect(accounts.resolve("rpk_abc")).toBe(accountIdOf("rpk_abc"));
    expect(accounts.resolve("bkey_1")).toBe(accountIdOf("bkey_1"));
    expect(accounts.resolve("rpk_ab")).toBeUndefined();
  });
});

describe("account keys", () => {
  it("come from RUNPODKIT_API_KEYS and are never printed (only a redacted form)", async () => {
    const cli = startCli(["--data", ":memory:"], { RUNPODKIT_API_KEYS: `${KEY_A}, ${KEY_B}` });
    try {
      await cli.ready;
      expect(await accountSees(cli, KEY_A)).toBe(200);
      expect(await accountSees(cli, KEY_B)).toBe(200);
      expect(await accountSees(cli, "rpk_not_a_key_0000000000")).toBe(401);
      const printed = cli.stdout() + cli.stderr();
      expect(printed).not.toContain(KEY_A);
      expect(printed).not.toContain(KEY_B);
      expect(printed).toContain(accountIdOf(KEY_A));
      expect(printed).toContain(accountIdOf(KEY_B));
      expect(printed).not.toContain("--api-key puts keys on the command line");
    } finally {
      cli.kill();
    }
  });

  it("come from --api-key-file (comments and blank lines skipped), warning when the file is readable by others", async () => {
    const file = join(dir, "keys");
    writeFileSync(file, `# accounts\n${KEY_A}\n\n  ${KEY_B}  \n`);
    chmodSync(file, 0o644);
    const cli = startCli(["--data", ":memory:", "--api-key-file", file]);
    try {
      expect(await accountSees(cli, KEY_B)).toBe(200);
      expect(cli.stderr()).toContain("can be read by other users");
      expect(cli.stdout() + cli.stderr()).not.toContain(KEY_A);
    } finally {
      cli.kill();
    }
    chmodSync(file, 0o600);
    expect(readApiKeys({ files: [file] })).toEqual({
      keys: [KEY_A, KEY_B],
      sameAccountKeys: {},
      warnings: [],
    });
  });

  it("a further key (startService's sameAccountKeys) opens the account of the key it names", () => {
    const accounts = new Accounts([KEY_A], { [KEY_B]: KEY_A });
    expect(accounts.resolve(`Bearer ${KEY_B}`)).toBe(accountIdOf(KEY_A));
    expect(accounts.ids).toEqual([accountIdOf(KEY_A)]);
    expect(() => new Accounts([KEY_A], { [KEY_B]: "rpk_unknown" })).toThrow(/not an account's/);
  });

  it("a key file's line `<further key> = <account key>` gives the CLI's account a further key (a rotation), never printed", async () => {
    const KEY_C = "rpk_new_gamma_0123456789abcdef";
    const file = join(dir, "rotation");
    writeFileSync(file, `${KEY_A}\n${KEY_C} = ${KEY_A}\n`, { mode: 0o600 });
    expect(readApiKeys({ files: [file] })).toEqual({
      keys: [KEY_A],
      sameAccountKeys: { [KEY_C]: KEY_A },
      warnings: [],
    });
    const cli = startCli(["--data", ":memory:", "--api-key-file", file]);
    try {
      const { restUrl } = await cli.ready;
      const made = await fetch(`${restUrl}/templates`, {
        method: "POST",
        headers: { authorization: `Bearer ${KEY_A}`, "content-type": "application/json" },
        body: JSON.stringify({ name: "before-rotation", imageName: "img" }),
      });
      expect(made.status).toBe(200);
      const seen = await fetch(`${restUrl}/templates`, { headers: { authorization: `Bearer ${KEY_C}` } });
      expect(((await seen.json()) as { name: string }[]).map((t) => t.name)).toEqual(["before-rotation"]);
      const printed = cli.stdout() + cli.stderr();
      expect(printed).toContain(`1 account(s): rpk… (${accountIdOf(KEY_A)})`);
      expect(printed).toContain(`1 further key(s): rpk… (opens ${accountIdOf(KEY_A)})`);
      expect(printed).not.toContain(KEY_C);
      expect(printed).not.toContain(accountIdOf(KEY_C));
    } finally {
      cli.kill();
    }
    // The key after "=" must be an account's; the key before it must not be one.
    const orphan = join(dir, "orphan");
    writeFileSync(orphan, `${KEY_C} = ${KEY_B}\n`, { mode: 0o600 });
    expect(() => readApiKeys({ files: [orphan], env: KEY_A })).toThrow(
      `--api-key-file ${orphan} line 1: the key after "=" is no account's key; give it on a line of its own (or in RUNPODKIT_API_KEYS) to make it an account`,
    );
    expect(() => readApiKeys({ files: [orphan], env: `${KEY_B},${KEY_C}` })).toThrow(
      /line 1: the key before "=" is an account's key itself/,
    );
    const help = startCli(["--help"]);
    await help.exited;
    expect(help.stdout()).toContain('line "<further key> = <account key>" gives that account a further key');
  });

  it("still come from --api-key, with a warning that the command line is visible, and are not printed", async () => {
    const cli = startCli(["--data", ":memory:", "--api-key", KEY_A]);
    try {
      expect(await accountSees(cli, KEY_A)).toBe(200);
      expect(cli.stderr()).toContain("--api-key puts keys on the command line");
      expect(cli.stdout() + cli.stderr()).not.toContain(KEY_A);
    } finally {
      cli.kill();
    }
  });

  it("refuses to start without a key, and names a bad key's line without echoing it", async () => {
    const cli = startCli(["--data", ":memory:"]);
    expect((await cli.exited).code).toBe(1);
    expect(cli.stderr()).toContain("no API key given");

    const file = join(dir, "bad-keys");
    writeFileSync(file, `${KEY_A}\nhas a space secret\n`, { mode: 0o600 });
    let message = "";
    try {
      readApiKeys({ files: [file] });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain(`--api-key-file ${file} line 2`);
    expect(message).not.toContain("secret");
    expect(readApiKeys({ env: `${KEY_A},${KEY_A}`, flags: [KEY_A] }).keys).toEqual([KEY_A]);
  });

  it("a --api-key-file that is no key file is refused in words, with the fix, and read within a bound", () => {
    const refusal = (file: string) => {
      try {
        readApiKeys({ files: [file] });
      } catch (error) {
        return (error as Error).message;
      }
      return "accepted";
    };
    const fix = "give a file with one account key per line";
    // Before: "--api-key-file nope: ENOENT", and /dev/zero read without end (4.4 GB of RSS in 20 s).
    expect(refusal(join(dir, "nope"))).toBe(
      `--api-key-file ${join(dir, "nope")}: no such file (ENOENT): ${fix}`,
    );
    expect(refusal(dir)).toBe(`--api-key-file ${dir}: a directory, not a file (EISDIR): ${fix}`);
    expect(refusal("/dev/zero")).toBe(
      `--api-key-file /dev/zero: more than 1048576 bytes, which no key file holds: ${fix}`,
    );
    const big = join(dir, "big-keys");
    writeFileSync(big, `${"x".repeat(1024 * 1024)}\n`, { mode: 0o600 });
    expect(refusal(big)).toBe(
      `--api-key-file ${big}: more than 1048576 bytes, which no key file holds: ${fix}`,
    );
    const good = join(dir, "good-keys");
    writeFileSync(good, `# ci\n${KEY_A}\n`, { mode: 0o600 });
    expect(readApiKeys({ files: [good] })).toEqual({ keys: [KEY_A], sameAccountKeys: {}, warnings: [] });
  });

  it("never reach the service's output, whatever the requests carry them in", async () => {
    const wrong = "rpk_wrong_key_SECRET_000000000";
    const cli = startCli(["--data", ":memory:"], { RUNPODKIT_API_KEYS: KEY_A });
    try {
      const { graphqlUrl, queueUrl, restUrl } = await cli.ready;
      const query = JSON.stringify({ query: "{ myself { id } }" });
      const json = { "content-type": "application/json" };
      for (const key of [KEY_A, wrong]) {
        await fetch(`${graphqlUrl}?api_key=${key}`, { method: "POST", headers: json, body: query });
        await fetch(`${graphqlUrl}?api_key=${key}`, { method: "POST", headers: json, body: "{not json" });
        await fetch(`${restUrl}/templates`, {
          method: "POST",
          headers: { ...json, authorization: key },
          body: "{}",
        });
        await fetch(`${queueUrl}/v2/nosuch/run?api_key=${key}`, {
          method: "POST",
          headers: { authorization: key },
        });
        await fetch(`${queueUrl}/v2/nosuch/job-take/w1`, { headers: { authorization: key } });
      }
      // The service has logged what it logs for these by the time it answers another request.
      await fetch(`${restUrl}/endpoints`, { headers: { authorization: `Bearer ${KEY_A}` } });
    } finally {
      cli.kill();
    }
    await cli.exited;
    expect(cli.stdout() + cli.stderr()).not.toContain(KEY_A);
    expect(cli.stdout() + cli.stderr()).not.toContain(wrong);
    expect(redactUrl(`/graphql?x=1&api_key=${KEY_A}&y=2`)).toBe("/graphql?x=1&api_key=[redacted]&y=2");
  });

  it("print as at most a 3-character prefix and the account id", () => {
    expect(redactKey(KEY_A)).toBe(`rpk… (${accountIdOf(KEY_A)})`);
    expect(redactKey("short-key")).toBe(`… (${accountIdOf("short-key")})`);
  });
});

/*
 * Keys are compared over their SHA-256 digests (a worker's key against the session's; account lookups by digest), so the
 * time a comparison takes does not grow with how much of a key a guess has right. Timing is not
 * measured here (no test asserts wall-clock time): these hold the comparisons to their answers.
 */
describe("key comparison", () => {
  it("sameKey accepts the key itself and refuses its prefixes, extensions, case changes and the empty key", () => {
    expect(sameKey(KEY_A, `${KEY_A}`)).toBe(true);
    for (const guess of [KEY_A.slice(0, -1), `${KEY_A}0`, KEY_A.toUpperCase(), "", KEY_B, ` ${KEY_A}`])
      expect({ guess, same: sameKey(guess, KEY_A) }).toEqual({ guess, same: false });
    expect(sameKey("", "")).toBe(true);
  });

  it("an account is found by its key (raw or Bearer) and by nothing that merely starts like it", () => {
    const accounts = new Accounts([KEY_A, KEY_B]);
    expect(accounts.resolve(KEY_A)).toBe(accountIdOf(KEY_A));
    expect(accounts.resolve(`Bearer ${KEY_B}`)).toBe(accountIdOf(KEY_B));
    for (const guess of [KEY_A.slice(0, 10), `${KEY_A}x`, KEY_A.toUpperCase(), accountIdOf(KEY_A)])
      expect({ guess, account: accounts.resolve(guess) }).toEqual({ guess, account: undefined });
  });

  it("a managed worker's own key opens its session; a key differing in one character is refused", () => {
    const workerKey = "rpk_worker_0123456789abcdef0123";
    const session = { id: "w1", endpointId: "ep1", key: workerKey } as unknown as WorkerSession;
    const dispatcher = {
      session: (endpointId: string, workerId: string) =>
        endpointId === "ep1" && workerId === "w1" ? session : undefined,
      open: () => {
        throw new Error("no session is opened in this test");
      },
    } as unknown as Dispatcher;
    const endpoints = { get: () => undefined } as unknown as EndpointDirectory;
    const access = new WorkerAccess(new Accounts([KEY_A]), dispatcher, endpoints);
    expect(access.session("ep1", "w1", workerKey)).toBe(session);
    expect(access.session("ep1", "w1", `Bearer ${workerKey}`)).toBe(session);
    const oneOff = `${workerKey.slice(0, -1)}4`;
    expect(() => access.session("ep1", "w1", oneOff)).toThrow("Unauthorized: unknown worker or key");
    expect(() => access.session("ep1", "w1", workerKey.slice(0, -1))).toThrow(/Unauthorized/);
    expect(() => access.session("ep1", "w1", undefined)).toThrow(/Unauthorized/);
  });
});
