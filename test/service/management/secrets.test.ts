import { resolve } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { GqlSecret } from "../../../sdk/schemas/secret";
import { ManualClock } from "../../../service/clock";
import { type TestService, withService } from "../../helpers/service";
import { ACCOUNT, eventually, type Harness, startHarness } from "../jobs/harness";
import { clients } from "./client";

/*
 * Secrets: the GraphQL operations of the real schema (values never readable back), and
 * `{{ RUNPOD_SECRET_<name> }}` in template and endpoint env resolved into a worker's environment when
 * it starts, or the worker failing to start with the reason shown among the endpoint's workers.
 */

const SECRET_FIELDS = "id name description createdAt updatedAt";
const VALUE = "hf_s3cr3t_value_0123456789";

describe("GraphQL secrets", () => {
  let service: TestService;
  let api: ReturnType<typeof clients>;
  let clock: ManualClock;
  const texts: string[] = [];

  beforeAll(async () => {
    clock = new ManualClock(Date.UTC(2026, 5, 1));
    service = await withService({ clock });
    api = clients(service);
  });
  afterAll(() => service.close());

  async function gql<T>(query: string, variables?: Record<string, unknown>, key?: string) {
    const reply = await api.gql<T>(query, variables, key);
    texts.push(reply.text);
    return reply;
  }

  it("creates, lists, rotates, describes and deletes; no reply ever carries the value", async () => {
    const created = await gql<{ secretCreate: GqlSecret }>(
      `mutation SecretCreate($input: SecretCreateInput!) { secretCreate(input: $input) { ${SECRET_FIELDS} } }`,
      { input: { name: "hf_token", value: VALUE, description: "Hugging Face read token" } },
    );
    expect(created.body.errors).toBeUndefined();
    const secret = GqlSecret.parse(created.body.data.secretCreate);
    expect(secret).toEqual({
      id: expect.stringMatching(/^cl/),
      name: "hf_token",
      description: "Hugging Face read token",
      createdAt: "2026-06-01T00:00:00.000Z",
      updatedAt: null,
    });

    const list = await gql<{ myself: { secrets: GqlSecret[] } }>(
      `{ myself { secrets { ${SECRET_FIELDS} } } }`,
    );
    expect(list.body.data.myself.secrets).toEqual([secret]);
    const other = await gql<{ myself: { secrets: GqlSecret[] } }>(
      `{ myself { secrets { id } } }`,
      undefined,
      service.otherApiKey,
    );
    expect(other.body.data.myself.secrets).toEqual([]);

    // There is no field to read a value with.
    const asked = await gql(`{ myself { secrets { id value } } }`);
    expect(asked.body.errors?.[0]?.message).toMatch(/Cannot query field "value"/);

    await clock.advance(60_000);
    const rotated = await gql<{ secretValueUpdate: GqlSecret }>(
      `mutation($input: SecretValueUpdateInput!) { secretValueUpdate(input: $input) { ${SECRET_FIELDS} } }`,
      { input: { id: secret.id, value: `${VALUE}-2` } },
    );
    expect(rotated.body.data.secretValueUpdate).toEqual({ ...secret, updatedAt: "2026-06-01T00:01:00.000Z" });
    const described = await gql<{ secretDescriptionUpdate: GqlSecret }>(
      `mutation($input: SecretDescriptionUpdateInput!) { secretDescriptionUpdate(input: $input) { name description } }`,
      { input: { id: secret.id, description: "rotated" } },
    );
    expect(described.body.data.secretDescriptionUpdate).toEqual({ name: "hf_token", description: "rotated" });

    const foreign = await gql(
      `mutation($id: ID!) { secretDelete(id: $id) }`,
      { id: secret.id },
      service.otherApiKey,
    );
    expect(foreign.body.errors?.[0]?.extensions).toMatchObject({ code: "NOT_FOUND" });
    const deleted = await gql<{ secretDelete: null }>(`mutation($id: ID!) { secretDelete(id: $id) }`, {
      id: secret.id,
    });
    expect(deleted.body.errors).toBeUndefined();
    expect(deleted.body.data.secretDelete).toBeNull();
    expect(
      (await gql<{ myself: { secrets: unknown[] } }>(`{ myself { secrets { id } } }`)).body.data.myself
        .secrets,
    ).toEqual([]);

    for (const text of texts) expect(text).not.toContain(VALUE);
  });

  it("validates names as the real service (letter or _ first; _.-/ inside; no RUNPOD prefix) and keeps them unique", async () => {
    const create = (name: string, value = "v") =>
      gql(`mutation($input: SecretCreateInput!) { secretCreate(input: $input) { id } }`, {
        input: { name, value },
      });
    for (const name of ["1abc", "a b", "RUNPOD_key", "runpodX", "x".repeat(192), "", "a:b"]) {
      const reply = await create(name);
      expect(reply.body.errors?.[0]?.extensions, name).toMatchObject({ code: "VALIDATION", field: "name" });
    }
    const empty = await create("empty_value", "");
    expect(empty.body.errors?.[0]?.extensions).toMatchObject({ code: "VALIDATION", field: "value" });
    for (const name of ["_x", "a.b-c/d_e", "A1", "x".repeat(191)]) {
      expect((await create(name)).body.errors, name).toBeUndefined();
    }
    const duplicate = await create("_x");
    expect(duplicate.body.errors?.[0]?.extensions).toMatchObject({ code: "CONFLICT", field: "name" });
    // Another account may use the same name.
    const elsewhere = await gql(
      `mutation { secretCreate(input: {name: "_x", value: "v"}) { id } }`,
      undefined,
      service.otherApiKey,
    );
    expect(elsewhere.body.errors).toBeUndefined();
  });
});

describe("secret references in worker env", () => {
  let h: Harness;
  afterEach(async () => h?.close());
  const HANDLER = resolve("test/service/management/fixtures/env-handler.ts");

  function envEndpoint(templateEnv: Record<string, string>, endpointEnv: Record<string, string>) {
    const template = h.management.templates.create(ACCOUNT, {
      name: `env-${Math.random().toString(36).slice(2)}`,
      imageName: "acme/env:1",
      isServerless: true,
      env: templateEnv,
    });
    return h.management.endpoints.create(ACCOUNT, {
      name: "env",
      templateId: template.id,
      workersMin: 0,
      workersMax: 1,
      env: endpointEnv,
    });
  }

  it("resolves {{ RUNPOD_SECRET_<name> }} from template and endpoint env into the worker's environment", async () => {
    h = await startHarness({ config: { handlers: { "acme/env": HANDLER } } });
    h.management.secrets.create(ACCOUNT, { name: "hf_token", value: VALUE });
    h.management.secrets.create(ACCOUNT, { name: "db/pass.word", value: "p@ss" });
    const ep = envEndpoint(
      { TOKEN: "{{ RUNPOD_SECRET_hf_token }}", PLAIN: "no reference" },
      { DSN: "postgres://u:{{RUNPOD_SECRET_db/pass.word}}@db/{{ RUNPOD_SECRET_hf_token }}" },
    );
    const reply = await h.call("POST", `/v2/${ep.id}/runsync`, {
      body: { input: { names: ["TOKEN", "PLAIN", "DSN"] } },
    });
    expect(reply.body).toMatchObject({
      status: "COMPLETED",
      output: { TOKEN: VALUE, PLAIN: "no reference", DSN: `postgres://u:p@ss@db/${VALUE}` },
    });
    // The management wires keep showing the references, never the values.
    const endpoint = await h.call("GET", `/v1/endpoints/${ep.id}?includeTemplate=true`);
    expect(endpoint.text).toContain("{{RUNPOD_SECRET_db/pass.word}}");
    expect(endpoint.text).not.toContain(VALUE);
    expect(h.logs.join("\n")).not.toContain(VALUE);
  });

  it("an unknown name: the worker fails to start, says why among the endpoint's workers, and backs off", async () => {
    h = await startHarness({ config: { handlers: { "acme/env": HANDLER } } });
    const clock = h.clock as ManualClock;
    const ep = envEndpoint({}, { TOKEN: "{{ RUNPOD_SECRET_missing_one }}" });
    const run = await h.call("POST", `/v2/${ep.id}/run`, { body: { input: { names: ["TOKEN"] } } });
    const jobId = (run.body as { id: string }).id;

    const failed = () =>
      h.plane.workers
        .list(ACCOUNT, ep.id)
        .filter((p) => p.failure !== undefined && p.desiredStatus === "TERMINATED");
    await eventually(() => (failed().length >= 1 ? true : undefined));
    expect(failed()[0]?.failure).toBe(
      "env references RUNPOD_SECRET_missing_one, but the account has no secret named missing_one",
    );
    const workers = await h.call("GET", `/v1/endpoints/${ep.id}?includeWorkers=true`);
    expect((workers.body as { workers: { lastStatusChange: string }[] }).workers[0]?.lastStatusChange).toBe(
      "failed to start: env references RUNPOD_SECRET_missing_one, but the account has no secret named missing_one",
    );
    expect(
      h.logs.some((line) => line.includes("could not start: env references RUNPOD_SECRET_missing_one")),
    ).toBe(true);

    // Backing off: nothing more is started until the service clock passes the delay (1 s, then 2 s).
    await new Promise((r) => setTimeout(r, 300));
    expect(failed()).toHaveLength(1);
    await clock.advance(1_000);
    await eventually(() => (failed().length >= 2 ? true : undefined));
    await new Promise((r) => setTimeout(r, 300));
    expect(failed()).toHaveLength(2);
    expect((await h.call("GET", `/v2/${ep.id}/status/${jobId}`)).body).toMatchObject({ status: "IN_QUEUE" });

    // Once the secret exists, the next start (after the 2 s back-off) runs the job with its value.
    h.management.secrets.create(ACCOUNT, { name: "missing_one", value: "found" });
    await clock.advance(2_000);
    const done = await eventually(async () => {
      const status = (await h.call("GET", `/v2/${ep.id}/status/${jobId}`)).body as { status: string };
      return status.status === "COMPLETED" ? status : undefined;
    });
    expect(done).toMatchObject({ output: { TOKEN: "found" } });
  });

  it("a secret too large for a process env: the worker fails to start saying so (never a spawn E2BIG retried in vain)", async () => {
    h = await startHarness({ config: { handlers: { "acme/env": HANDLER } } });
    // Within the secret's own bound (16 MiB), past what one variable of a process may hold (128 KiB).
    h.management.secrets.create(ACCOUNT, { name: "cert", value: "c".repeat(200 * 1024) });
    const ep = envEndpoint({ CERT: "{{ RUNPOD_SECRET_cert }}" }, {});
    await h.call("POST", `/v2/${ep.id}/run`, { body: { input: { names: ["CERT"] } } });
    const failed = () =>
      h.plane.workers
        .list(ACCOUNT, ep.id)
        .filter((p) => p.failure !== undefined && p.desiredStatus === "TERMINATED");
    await eventually(() => (failed().length >= 1 ? true : undefined));
    const why = `env CERT is ${5 + 200 * 1024 + 1} bytes (with its secrets substituted), more than the 131072 one variable of a process may hold`;
    expect(failed()[0]?.failure).toBe(why);
    expect(h.logs.some((line) => line.includes(`could not start: ${why}`))).toBe(true);
    expect(h.logs.join("\n")).not.toContain("E2BIG");
    // The worker's own logs say it too (GET /v2/{endpoint}/logs), never the value.
    const logs = await h.call("GET", `/v2/${ep.id}/logs`);
    expect(logs.text).toContain(`worker could not start: ${why}`);
    expect(logs.text).not.toContain("cccccccc");
  });
});
