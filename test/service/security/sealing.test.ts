import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openDatabase } from "../../../service/db";
import { accountIdOf } from "../../../service/edge/auth";
import { jobMigrations } from "../../../service/jobs/store/job-store";
import { managementMigrations } from "../../../service/management/store/migrations";
import { keyFileOf, Sealer, StoreKeyError } from "../../../service/management/store/sealing";
import { TEST_KEYS, withService } from "../../helpers/service";
import { clients } from "../management/client";

const dir = mkdtempSync(join(tmpdir(), "runpodkit-sealing-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const ACCOUNT = accountIdOf(TEST_KEYS[0]);
const PASSWORD = "registry-pw-SECRET-5f1e2d";
const TEMPLATE_VALUE = "hf_template_SECRET_9a8b7c";
const ENDPOINT_VALUE = "endpoint_env_SECRET_3c2b1a";
const SECRET_VALUE = "account_secret_SECRET_77aa11";
const POD_VALUE = "pod_env_SECRET_55cc22";
const ALL = [PASSWORD, TEMPLATE_VALUE, ENDPOINT_VALUE, SECRET_VALUE, POD_VALUE];

/** The raw bytes of the store file and its WAL files, as anyone holding a copy could read them. */
function rawStore(data: string): Buffer {
  return Buffer.concat(
    [data, `${data}-wal`, `${data}-shm`].filter((file) => existsSync(file)).map((file) => readFileSync(file)),
  );
}

function holds(data: string, text: string): boolean {
  return rawStore(data).includes(Buffer.from(text));
}

async function createSecrets(service: Awaited<ReturnType<typeof withService>>) {
  const api = clients(service);
  const auth = await api.rest<{ id: string }>("POST", "/containerregistryauth", {
    name: "private",
    username: "me",
    password: PASSWORD,
  });
  expect(auth.status).toBe(200);
  const template = await api.rest<{ id: string }>("POST", "/templates", {
    name: "sealed",
    imageName: "runpodkit/echo",
    isServerless: true,
    env: { HF_TOKEN: TEMPLATE_VALUE },
  });
  expect(template.status).toBe(200);
  // Endpoint env is GraphQL's (REST endpoints have none).
  const endpoint = await api.gql<{ saveEndpoint: { id: string } }>(
    "mutation Save($input: EndpointInput!) { saveEndpoint(input: $input) { id } }",
    {
      input: {
        name: "sealed",
        templateId: template.body.id,
        gpuIds: "AMPERE_16",
        workersMin: 0,
        workersMax: 0,
        env: [{ key: "EP_SECRET", value: ENDPOINT_VALUE }],
      },
    },
  );
  expect(endpoint.body.errors).toBeUndefined();
  const secret = await api.gql<{ secretCreate: { id: string } }>(
    "mutation S($input: SecretCreateInput!) { secretCreate(input: $input) { id } }",
    { input: { name: "sealed_secret", value: SECRET_VALUE } },
  );
  expect(secret.body.errors).toBeUndefined();
  const pod = await api.rest<{ id: string }>("POST", "/pods", {
    name: "sealed",
    imageName: "repo/train:1",
    gpuTypeIds: ["NVIDIA GeForce RTX 4090"],
    env: { POD_TOKEN: POD_VALUE },
  });
  expect(pod.status).toBe(200);
  return {
    podId: pod.body.id,
    authId: auth.body.id,
    templateId: template.body.id,
    endpointId: endpoint.body.data.saveEndpoint.id,
  };
}

describe("secrets at rest", () => {
  it("registry passwords and env values are not in the file (before and after delete); a restart reads them back", async () => {
    const data = join(dir, "sealed.sqlite");
    const first = await withService({ data });
    const ids = await createSecrets(first);
    for (const secret of ALL) expect(holds(data, secret)).toBe(false);
    // The names stay readable; only values are sealed.
    expect(holds(data, "HF_TOKEN")).toBe(true);
    await first.close();
    for (const secret of ALL) expect(holds(data, secret)).toBe(false);
    expect(statSync(keyFileOf(data)).mode & 0o777).toBe(0o600);

    const second = await withService({ data });
    try {
      const { management } = second;
      expect(management.registryAuths.get(ACCOUNT, ids.authId).password).toBe(PASSWORD);
      expect(management.templates.get(ACCOUNT, ids.templateId).env).toEqual({ HF_TOKEN: TEMPLATE_VALUE });
      expect(management.endpoints.get(ACCOUNT, ids.endpointId).env).toEqual({ EP_SECRET: ENDPOINT_VALUE });
      expect(management.pods.rented(ACCOUNT, ids.podId).env).toEqual({ POD_TOKEN: POD_VALUE });
      const api = clients(second);
      expect((await api.rest("DELETE", `/endpoints/${ids.endpointId}`)).status).toBe(204);
      expect((await api.rest("DELETE", `/templates/${ids.templateId}`)).status).toBe(204);
      expect((await api.rest("DELETE", `/containerregistryauth/${ids.authId}`)).status).toBe(204);
      expect((await api.rest("DELETE", `/pods/${ids.podId}`)).status).toBeLessThan(300);
    } finally {
      await second.close();
    }
    for (const secret of ALL) expect(holds(data, secret)).toBe(false);
  });

  it("a wrong key is refused at open with an error naming where the key came from", async () => {
    const data = join(dir, "keyed.sqlite");
    const key = randomBytes(32).toString("hex");
    const first = await withService({ data, storeKey: key });
    await createSecrets(first);
    await first.close();
    expect(existsSync(keyFileOf(data))).toBe(false);

    const wrong = randomBytes(32).toString("base64");
    await expect(withService({ data, storeKey: wrong })).rejects.toThrow(StoreKeyError);
    await expect(withService({ data, storeKey: wrong })).rejects.toThrow(
      /sealed with another key than the one from RUNPODKIT_STORE_KEY/,
    );
    // Without the key, the store's key file is missing: said so, and no stray key file is left.
    await expect(withService({ data })).rejects.toThrow(`its key file ${keyFileOf(data)} is missing`);
    expect(existsSync(keyFileOf(data))).toBe(false);
    await expect(withService({ data, storeKey: "too-short" })).rejects.toThrow(
      "RUNPODKIT_STORE_KEY: expected 32 bytes as 64 hex digits or base64",
    );

    // A key file that is there but holds another key: named as the key's source.
    writeFileSync(keyFileOf(data), `${randomBytes(32).toString("hex")}\n`, { mode: 0o600 });
    await expect(withService({ data })).rejects.toThrow(
      `sealed with another key than the one from key file ${keyFileOf(data)}`,
    );
    rmSync(keyFileOf(data));

    const again = await withService({ data, storeKey: key });
    try {
      expect(again.management.templates.list(ACCOUNT)[0]?.env).toEqual({ HF_TOKEN: TEMPLATE_VALUE });
    } finally {
      await again.close();
    }
  });

  it("a damaged value fails with a typed error, not garbage", () => {
    const sealer = new Sealer(randomBytes(32), "test key");
    const sealed = sealer.seal("value");
    expect(sealer.open(sealed, "x")).toBe("value");
    const other = new Sealer(randomBytes(32), "other key");
    expect(() => other.open(sealed, "template t1 env A")).toThrow(
      "unsealing template t1 env A: the store key (other key) is not the key it was sealed with",
    );
    const flipped = `${sealed.slice(0, -4)}AAA=`;
    expect(() => sealer.open(flipped, "x")).toThrow(StoreKeyError);
  });

  it("a store written before sealing is sealed when opened: plain rows and deleted rows leave the file", async () => {
    const data = join(dir, "legacy.sqlite");
    const legacy = openDatabase(data, [...managementMigrations, ...jobMigrations]);
    // As the service stored them before: plain JSON documents, deletes leaving free pages behind.
    legacy.exec("PRAGMA secure_delete = OFF");
    const now = Date.now();
    const put = (table: string, id: string, name: string, doc: object) =>
      legacy
        .prepare(`INSERT INTO ${table} (account_id, id, name, created_at, data) VALUES (?, ?, ?, ?, ?)`)
        .run(
          ACCOUNT,
          id,
          name,
          now,
          JSON.stringify({ id, accountId: ACCOUNT, name, createdAt: now, ...doc }),
        );
    put("mgmt_registry_auths", "auth1", "private", { username: "me", password: PASSWORD });
    put("mgmt_registry_auths", "auth2", "gone", { username: "me", password: "deleted-pw-SECRET-77" });
    legacy.prepare("DELETE FROM mgmt_registry_auths WHERE id = 'auth2'").run();
    put("mgmt_templates", "tpl1", "legacy", {
      imageName: "runpodkit/echo",
      category: "NVIDIA",
      isServerless: true,
      isPublic: false,
      containerDiskInGb: 50,
      volumeInGb: 0,
      volumeMountPath: "/workspace",
      dockerEntrypoint: [],
      dockerStartCmd: [],
      env: { HF_TOKEN: TEMPLATE_VALUE },
      ports: [],
      readme: "",
      containerRegistryAuthId: null,
      startSsh: false,
      startJupyter: false,
      startScript: "",
    });
    legacy
      .prepare(
        "INSERT INTO mgmt_secrets (account_id, id, name, description, value, created_at) VALUES (?, ?, ?, NULL, ?, ?)",
      )
      .run(ACCOUNT, "sec1", "legacy_secret", SECRET_VALUE, now);
    legacy.exec("DELETE FROM mgmt_sealing");
    legacy.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    legacy.close();
    // The fixture is what the finding describes: plain and deleted secrets readable in the file.
    expect(holds(data, PASSWORD)).toBe(true);
    expect(holds(data, "deleted-pw-SECRET-77")).toBe(true);
    expect(holds(data, TEMPLATE_VALUE)).toBe(true);
    expect(holds(data, SECRET_VALUE)).toBe(true);

    const service = await withService({ data });
    try {
      expect(service.management.registryAuths.get(ACCOUNT, "auth1").password).toBe(PASSWORD);
      expect(service.management.templates.get(ACCOUNT, "tpl1").env).toEqual({ HF_TOKEN: TEMPLATE_VALUE });
      for (const secret of [PASSWORD, "deleted-pw-SECRET-77", TEMPLATE_VALUE, SECRET_VALUE]) {
        expect(holds(data, secret)).toBe(false);
      }
    } finally {
      await service.close();
    }
  });
});
