import { execFile } from "node:child_process";
import { cp, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import semver from "semver";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { installProgram, PROJECT_ROOT, packProject } from "../../engine/package";
import { DynamicProviderHost, type Props } from "../../engine/provider-host";
import { ManualClock } from "../../service/clock";
import { dynamicUrn, stackConfig } from "../helpers/pulumi-host";
import { type TestService, withService } from "../helpers/service";

/**
 * Versioned state across two packed releases: the project as it is, and the same sources with a
 * higher version (a temporary copy). Each is installed from its tarball into its own program folder
 * and run in Pulumi's provider host started there, as the CLI would after `npm install runpodkit@x`.
 * The serialized provider names the implementation by package path, so the same state is read and
 * deleted by whichever version the folder has installed.
 */

const run = promisify(execFile);
const NODE = join(PROJECT_ROOT, "node_modules/.bin/node");
const FIXTURE = join(__dirname, "fixtures/host-program");

interface Release {
  version: string;
  dir: string;
  host: DynamicProviderHost;
  /** The serialized Template provider, as the installed package's Resource class makes it. */
  text: string;
}

let service: TestService;
let older: Release;
let newer: Release;
let copy: string | undefined;

/** The sources with another version in package.json, to pack as a second release. */
async function withVersion(version: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "runpodkit-release-"));
  const entries = ["index.ts", "sdk", "service", "provider", "tsconfig.json", "tsconfig.build.json"];
  for (const entry of [...entries, "schema.json", "README.md", "CHANGELOG.md"]) {
    await cp(join(PROJECT_ROOT, entry), join(dir, entry), { recursive: true });
  }
  const manifest = JSON.parse(await readFile(join(PROJECT_ROOT, "package.json"), "utf8")) as {
    version: string;
  };
  await writeFile(join(dir, "package.json"), JSON.stringify({ ...manifest, version }, null, 2));
  await symlink(join(PROJECT_ROOT, "node_modules"), join(dir, "node_modules"), "dir");
  return dir;
}

async function release(root: string): Promise<Release> {
  const pkg = await packProject(root);
  const { dir } = await installProgram(FIXTURE, pkg);
  const script = [
    'const { templateForwarder } = require("runpodkit/dist/provider/template");',
    'require("@pulumi/pulumi").runtime.serializeFunction(() => templateForwarder, { allowSecrets: true })',
    "  .then((s) => process.stdout.write(JSON.stringify(s.text)));",
  ].join("\n");
  const { stdout } = await run(NODE, ["-e", script], { cwd: dir });
  const host = await DynamicProviderHost.start({
    pulumiFrom: dir,
    cwd: dir,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? tmpdir() },
    node: NODE,
  });
  await host.configure(stackConfig(service, service.apiKey));
  return { version: pkg.version, dir, host, text: JSON.parse(stdout) as string };
}

beforeAll(async () => {
  service = await withService({ clock: new ManualClock() });
  const current = JSON.parse(await readFile(join(PROJECT_ROOT, "package.json"), "utf8")) as {
    version: string;
  };
  copy = await withVersion(semver.inc(current.version, "minor") ?? "99.0.0");
  older = await release(PROJECT_ROOT);
  newer = await release(copy);
}, 900_000);

afterAll(async () => {
  await Promise.all([older?.host.close(), newer?.host.close()]);
  if (copy) await rm(copy, { recursive: true, force: true });
  await service?.close();
});

async function create(r: Release, name: string): Promise<{ urn: string; id: string; outputs: Props }> {
  const urn = dynamicUrn("Template", name);
  const news = { imageName: "img:1", __logicalName: name, __scope: "p/s", __provider: r.text };
  const checked = await r.host.check(urn, {}, news);
  expect(checked.failures).toEqual([]);
  const created = await r.host.create(urn, checked.inputs);
  return { urn, id: created.id, outputs: created.properties };
}

describe("two releases of the package over one state", () => {
  test("both name the implementation by the same package path", () => {
    expect(semver.gt(newer.version, older.version)).toBe(true);
    expect(newer.text).toBe(older.text);
    expect(older.text).toContain("runpodkit/dist/provider/template-provider");
  });

  test("the newer one reads, updates and deletes what the older one wrote; the state records who wrote it", async () => {
    const t = await create(older, "upgraded");
    expect(t.outputs.__runpodkitVersion).toBe(older.version);
    const read = await newer.host.read(t.urn, t.id, t.outputs);
    expect(read).toMatchObject({
      id: t.id,
      properties: { imageName: "img:1", __runpodkitVersion: newer.version },
    });
    const news = { ...read.inputs, imageName: "img:2", __provider: newer.text };
    expect((await newer.host.diff(t.urn, t.id, t.outputs, news)).changes).toBe("some");
    const updated = await newer.host.update(t.urn, t.id, t.outputs, news);
    expect(updated.properties).toMatchObject({ imageName: "img:2", __runpodkitVersion: newer.version });
    await newer.host.delete(t.urn, t.id, t.outputs);
    expect((await newer.host.read(t.urn, t.id, t.outputs)).id).toBe("");
  });

  test("state written before versions were recorded is read and deleted too", async () => {
    const t = await create(older, "unversioned");
    const { __runpodkitVersion: _written, ...legacy } = t.outputs;
    expect((await newer.host.read(t.urn, t.id, legacy)).id).toBe(t.id);
    await newer.host.delete(t.urn, t.id, legacy);
  });

  test("a downgrade is refused by read, diff and delete, naming both versions and the fix", async () => {
    const t = await create(newer, "downgraded");
    const refusal = new RegExp(
      `written by runpodkit ${newer.version.replaceAll(".", "\\.")}, but the program folder has runpodkit ${older.version.replaceAll(".", "\\.")}.*npm install runpodkit@\\^${newer.version.replaceAll(".", "\\.")}`,
    );
    await expect(older.host.read(t.urn, t.id, t.outputs)).rejects.toThrow(refusal);
    await expect(
      older.host.diff(t.urn, t.id, t.outputs, { ...t.outputs, __provider: older.text }),
    ).rejects.toThrow(refusal);
    await expect(older.host.delete(t.urn, t.id, t.outputs)).rejects.toThrow(refusal);
    expect((await newer.host.read(t.urn, t.id, t.outputs)).id).toBe(t.id); // untouched
    await newer.host.delete(t.urn, t.id, t.outputs);
  });
});
