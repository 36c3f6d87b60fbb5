import { cp, mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { DynamicProviderHost, type Props } from "../../engine/provider-host";
import { SecretBox } from "../../engine/secret-box";
import { openState, readStateFile, type StackState } from "../../engine/state";
import { reveal } from "../../engine/values";
import { containerRegistryAuthForwarder } from "../../provider/container-registry-auth";
import { endpointForwarder } from "../../provider/endpoint";
import { networkVolumeForwarder } from "../../provider/network-volume";
import { templateForwarder } from "../../provider/template";
import { RestClient } from "../../sdk/rest";
import { ManualClock } from "../../service/clock";
import { accountIdOf } from "../../service/edge/auth";
import { PROJECT_ROOT, serializeProvider, stackConfig } from "../helpers/pulumi-host";
import { type TestService, withService } from "../helpers/service";

/**
 * A real earlier release under today's code: fixtures/release-e3b74c6 holds what runpodkit 0.1.0 as of
 * commit e3b74c6 (2026-11-23) wrote, made by packing that commit, installing the tarball in a program
 * folder and running it: the service's store (`runpodkit --data`, stopped cleanly) and the Pulumi state
 * of a program with a NetworkVolume, a ContainerRegistryAuth (secret password), a Template (secret env,
 * the auth) and an Endpoint (the template and volume, secret env, scaling settings), plus REST-made
 * resources of a second account, a finished and a queued job. Test keys and values only; the state's
 * passphrase is below. Today's service opens that store, and today's provider diffs, reads and deletes
 * that state, read and delete through the provider code the old state holds, as Pulumi runs it.
 */

const FIXTURE = join(__dirname, "fixtures/release-e3b74c6");
const PASSPHRASE = "upgrade-audit-passphrase";
const OWNER_KEY = "rpk_upgrade_test_key";
const OTHER_KEY = "rpk_upgrade_second_key";
const OWNER = accountIdOf(OWNER_KEY);
const OTHER = accountIdOf(OTHER_KEY);
/** When the fixture's store was closed: its finished job is kept until 30 minutes after it ended. */
const STORE_CLOSED_AT = Date.UTC(2026, 10, 27, 15, 3, 30);
const FINISHED_JOB = "626676d2-4ef9-41c2-9802-dcaa92543083-u1";
const QUEUED_JOB = "ae4ee2e7-056d-442d-bfec-5b957b5b2bfb-u1";
const NODE = join(PROJECT_ROOT, "node_modules/.bin/node");

let dir: string;
let service: TestService;
let state: StackState;
let host: DynamicProviderHost;
let rest: RestClient;
/** Today's serialized providers, as today's Resource classes put them in a program's inputs. */
const today: Record<string, string> = {};

/**
 * Pulumi's provider host where `require("runpodkit/dist/provider/<file>")` (the specifier the installed
 * package serializes, which the old state holds) loads this checkout's sources: a stand-in package on
 * NODE_PATH whose dist/ is the checkout, run with tsx (no build needed).
 */
async function installedLikeHost(): Promise<DynamicProviderHost> {
  const standIn = join(dir, "modules", "runpodkit");
  await mkdir(standIn, { recursive: true });
  await writeFile(join(standIn, "package.json"), JSON.stringify({ name: "runpodkit", private: true }));
  await symlink(PROJECT_ROOT, join(standIn, "dist"), "dir");
  // Today's classes, loaded from the checkout, serialize `runpodkit/provider/<file>`.
  await symlink(join(PROJECT_ROOT, "provider"), join(standIn, "provider"), "dir");
  return DynamicProviderHost.start({
    pulumiFrom: PROJECT_ROOT,
    cwd: dir,
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? tmpdir(),
      NODE_PATH: join(dir, "modules"),
    },
    node: NODE,
    nodeArgs: ["--import", pathToFileURL(require.resolve("tsx")).href],
  });
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "runpodkit-old-release-"));
  await cp(join(FIXTURE, "store.sqlite"), join(dir, "store.sqlite"));
  await cp(join(FIXTURE, "store.sqlite.key"), join(dir, "store.sqlite.key"));
  service = await withService({
    apiKeys: [OWNER_KEY, OTHER_KEY],
    data: join(dir, "store.sqlite"),
    clock: new ManualClock(STORE_CLOSED_AT),
  });
  rest = new RestClient({ apiKey: OWNER_KEY, baseUrl: service.restUrl });
  const file = await readStateFile(join(FIXTURE, "state.json"));
  if (file === undefined) throw new Error("fixture state.json is missing");
  state = openState(file, SecretBox.create(PASSPHRASE, file.secrets.salt));
  host = await installedLikeHost();
  await host.configure(stackConfig(service, OWNER_KEY));
  today.Endpoint = await serializeProvider(endpointForwarder);
  today.Template = await serializeProvider(templateForwarder);
  today.NetworkVolume = await serializeProvider(networkVolumeForwarder);
  today.ContainerRegistryAuth = await serializeProvider(containerRegistryAuthForwarder);
}, 120_000);

afterAll(async () => {
  await host?.close();
  await rest?.close();
  await service?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

interface OldResource {
  urn: string;
  kind: string;
  id: string;
  inputs: Props;
  outputs: Props;
}

/** The stack's resources of one kind as the old release left them, secrets revealed. */
function old(kind: string): OldResource {
  const found = state.resources.find((r) => r.type === `pulumi-nodejs:dynamic/runpodkit:${kind}`);
  if (found === undefined) throw new Error(`no ${kind} in the fixture state`);
  const revealed = reveal(found.outputs) as Props;
  // The fixture's service ran at another address; the stack's config follows the service (its url).
  const outputs =
    typeof revealed.url === "string"
      ? { ...revealed, url: revealed.url.replace(/^http:\/\/[^/]+/, service.queueUrl) }
      : revealed;
  return { urn: found.urn, kind, id: found.id, inputs: reveal(found.inputs) as Props, outputs };
}

const KINDS = ["NetworkVolume", "ContainerRegistryAuth", "Template", "Endpoint"] as const;

describe("the store an earlier release wrote, opened by today's service", () => {
  test("every resource of both accounts is there, secrets open", async () => {
    const m = service.management;
    expect(m.endpoints.list(OWNER).map((e) => e.id)).toEqual([old("Endpoint").id]);
    expect(m.templates.list(OWNER).map((t) => t.id)).toEqual([old("Template").id]);
    expect(m.networkVolumes.list(OWNER).map((v) => [v.id, v.name, v.size])).toEqual([
      [old("NetworkVolume").id, "upgrade-models", 50],
    ]);
    const [auth] = m.registryAuths.list(OWNER);
    expect([auth?.id, auth?.username, auth?.password]).toEqual([
      old("ContainerRegistryAuth").id,
      "acme-bot",
      "test-registry-password",
    ]);
    expect(m.templates.get(OWNER, old("Template").id).env).toEqual({
      MODE: "slow",
      TOKEN: "test-token-value",
    });
    const endpoint = m.endpoints.get(OWNER, old("Endpoint").id);
    expect(endpoint.env).toEqual({ LOG_LEVEL: "info", API_SECRET: "test-api-secret" });
    expect([endpoint.workersMax, endpoint.idleTimeout, endpoint.scalerType, endpoint.scalerValue]).toEqual([
      3,
      30,
      "REQUEST_COUNT",
      4,
    ]);
    expect(m.templates.list(OTHER).map((t) => [t.name, t.env])).toEqual([
      ["idle-tpl", { SECRET_ENV: "s3cr3t-test" }],
    ]);
    expect(m.endpoints.list(OTHER).map((e) => e.name)).toEqual(["idle-ep"]);
    expect(m.networkVolumes.list(OTHER).map((v) => v.name)).toEqual(["acct2-vol"]);
    expect(m.registryAuths.list(OTHER).map((a) => [a.name, a.password])).toEqual([
      ["acct2-auth", "test-pass-2"],
    ]);
  });

  test("a finished job keeps its output and a queued one is still queued, each under its account's key", async () => {
    const status = async (key: string, endpointId: string, jobId: string) => {
      const res = await fetch(`${service.queueUrl}/v2/${endpointId}/status/${jobId}`, {
        headers: { authorization: `Bearer ${key}` },
      });
      return { code: res.status, body: (await res.json()) as { status?: string; output?: unknown } };
    };
    const finished = await status(OWNER_KEY, old("Endpoint").id, FINISHED_JOB);
    expect(finished.code).toBe(200);
    expect([finished.body.status, finished.body.output]).toEqual([
      "COMPLETED",
      { echo: { n: 2 }, mode: "slow" },
    ]);
    const otherEndpoint = service.management.endpoints.list(OTHER)[0]?.id ?? "";
    const queued = await status(OTHER_KEY, otherEndpoint, QUEUED_JOB);
    expect([queued.code, queued.body.status]).toEqual([200, "IN_QUEUE"]);
    // The owner's key does not open the other account's job.
    expect((await status(OWNER_KEY, otherEndpoint, QUEUED_JOB)).code).toBe(404);
  });
});

describe("the stack an earlier release wrote, under today's provider", () => {
  test.each(KINDS)("%s: check and diff of the unchanged program find nothing to do", async (kind) => {
    const r = old(kind);
    // The program as it was, sent by today's Resource class (today's serialized provider).
    const news = { ...r.inputs, __provider: today[kind] };
    const checked = await host.check(r.urn, r.inputs, news);
    expect(checked.failures).toEqual([]);
    const diff = await host.diff(r.urn, r.id, r.outputs, checked.inputs, r.inputs);
    expect({ kind, changes: diff.changes, replaces: diff.replaces }).toEqual({
      kind,
      changes: "none",
      replaces: [],
    });
  });

  test.each(KINDS)(
    "%s: refresh through the provider code in the old state reads it unchanged",
    async (kind) => {
      const r = old(kind);
      const read = await host.read(r.urn, r.id, r.outputs, r.inputs);
      expect(read.id).toBe(r.id);
      const { __provider: _text, ...outputs } = r.outputs;
      // Every value the old release wrote reads back the same (today adds keys such as the account).
      expect(read.properties).toMatchObject(outputs);
      expect(read.properties.__provider).toBe(r.outputs.__provider);
    },
  );

  test("destroy through the provider code in the old state deletes everything, the endpoint first", async () => {
    for (const kind of ["Endpoint", "Template", "NetworkVolume", "ContainerRegistryAuth"] as const) {
      const r = old(kind);
      await host.delete(r.urn, r.id, r.outputs, r.inputs);
    }
    const m = service.management;
    expect([
      m.endpoints.list(OWNER),
      m.templates.list(OWNER),
      m.networkVolumes.list(OWNER),
      m.registryAuths.list(OWNER),
    ]).toEqual([[], [], [], []]);
    // The other account's resources are untouched.
    expect(m.endpoints.list(OTHER)).toHaveLength(1);
  });
});
