import { spawn } from "node:child_process";
import {
  chmodSync,
  chownSync,
  existsSync,
  lstatSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readServiceAddress } from "../../../service/service-address";
import { type TestService, withService } from "../../helpers/service";

/*
 * `runpodkit logs --data <store>` sends RUNPOD_API_KEY to the URL in `<store>.address.json`. Beside a
 * store in a shared directory (/tmp), another user can put that file there first: its URL must not
 * be followed unless the file is this user's own and only this user can write it.
 */
const LOADER = `file://${resolve("node_modules/tsx/dist/loader.mjs")}`;
const CLI = resolve("service/main.ts");
const KEY = "rpk_address_trust_key_0123456789";

const dir = mkdtempSync(join(tmpdir(), "runpodkit-address-trust-"));
/** Authorization headers the stand-in for someone else's server received. */
const received: string[] = [];
let catcher: Server;
let catcherUrl: string;
beforeAll(async () => {
  catcher = createServer((req, res) => {
    received.push(req.headers.authorization ?? "");
    res.writeHead(404, { "content-type": "application/json" }).end('{"error":"no"}');
  });
  await new Promise<void>((done) => catcher.listen(0, "127.0.0.1", done));
  catcherUrl = `http://127.0.0.1:${(catcher.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((done) => catcher.close(done));
  rmSync(dir, { recursive: true, force: true });
});

/** An address file naming the catcher, as a running service's (this test's process is alive). */
function addressFile(name: string, mode: number): string {
  const store = join(dir, `${name}.sqlite`);
  const file = `${store}.address.json`;
  writeFileSync(
    file,
    JSON.stringify({
      pid: process.pid,
      queueUrl: catcherUrl,
      restUrl: `${catcherUrl}/v1`,
      graphqlUrl: `${catcherUrl}/graphql`,
    }),
  );
  chmodSync(file, mode);
  return store;
}

/** `runpodkit logs ep1 --data <store>` with the key in its environment; its stderr once it exits. */
async function logs(store: string): Promise<string> {
  const child = spawn(process.execPath, ["--import", LOADER, CLI, "logs", "ep1", "--data", store], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", RUNPOD_API_KEY: KEY },
  });
  let stderr = "";
  child.stderr.on("data", (chunk) => {
    stderr += String(chunk);
  });
  await new Promise((done) => child.once("exit", done));
  return stderr;
}

/** The address a started service writes beside its store. */
const addressOf = (service: TestService) => ({
  pid: process.pid,
  queueUrl: service.queueUrl,
  restUrl: service.restUrl,
  graphqlUrl: service.graphqlUrl,
});

const keySent = () => received.some((header) => header.includes(KEY));

describe("runpodkit logs and the address file beside the store", () => {
  it("a file others can write is not followed: the key never reaches the URL it names", async () => {
    received.length = 0;
    const stderr = await logs(addressFile("writable", 0o666));
    expect(stderr).toContain("is not trusted: other users can write it");
    expect(keySent()).toBe(false);
  });

  it.runIf(process.getuid?.() === 0)("a file of another user is not followed", async () => {
    received.length = 0;
    const store = addressFile("theirs", 0o644);
    chownSync(`${store}.address.json`, 65534, 65534);
    const stderr = await logs(store);
    expect(stderr).toContain("is not trusted: it belongs to another user (uid 65534)");
    expect(keySent()).toBe(false);
  });

  it("this user's own file, writable by this user only, is followed (the service it names gets the key)", async () => {
    received.length = 0;
    await logs(addressFile("mine", 0o600));
    expect(keySent()).toBe(true);
  });

  it("the service never writes its address through a link someone put at its temporary name", async () => {
    const victim = join(dir, "victim.txt");
    writeFileSync(victim, "precious\n");
    const data = join(dir, "linked.sqlite");
    // The name the service writes its address to first (service-address.ts): predictable from its pid.
    symlinkSync(victim, `${data}.address.json.${process.pid}.tmp`);
    const service = await withService({ data });
    try {
      expect(readFileSync(victim, "utf8")).toBe("precious\n");
      // Before: the link made the write fail (EEXIST), so the address was never written and
      // `runpodkit logs` needed --url. The link itself is removed, not its target.
      expect(readServiceAddress(data)).toEqual({ address: addressOf(service) });
      expect(existsSync(`${data}.address.json.${process.pid}.tmp`)).toBe(false);
      expect(lstatSync(victim).isFile()).toBe(true);
    } finally {
      await service.close();
    }
    expect(readFileSync(victim, "utf8")).toBe("precious\n");
  });

  it("a temporary address file a killed service left under this pid does not stop the address being written", async () => {
    for (const name of ["left-1", "left-2"]) {
      const data = join(dir, `${name}.sqlite`);
      // A service SIGKILLed between creating its temporary file and renaming it, under the pid this
      // process now has (a container restarted).
      writeFileSync(`${data}.address.json.${process.pid}.tmp`, '{"pid":');
      const service = await withService({ data });
      try {
        expect(readServiceAddress(data)).toEqual({ address: addressOf(service) });
        expect(statSync(`${data}.address.json`).mode & 0o777).toBe(0o600);
        expect(existsSync(`${data}.address.json.${process.pid}.tmp`)).toBe(false);
      } finally {
        await service.close();
      }
    }
  });
});
