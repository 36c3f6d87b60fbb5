import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { isRuntimeVariable, workerEnv } from "../../../service/jobs/workers/environment";
import { ACCOUNT, type Harness, KEY, OTHER_KEY, startHarness } from "../jobs/harness";

const dir = mkdtempSync(join(tmpdir(), "runpodkit-env-"));
const marker = join(dir, "evil-ran");
const evil = join(dir, "evil.js");
const ENV_HANDLER = join(__dirname, "fixtures", "env-handler.ts");

beforeAll(() => {
  writeFileSync(evil, `require("node:fs").writeFileSync(${JSON.stringify(marker)}, "ran");\n`);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let h: Harness | undefined;
afterEach(async () => {
  delete process.env.RUNPODKIT_API_KEYS;
  delete process.env.SERVICE_ONLY_MARKER;
  await h?.close();
  h = undefined;
});

function started(): Harness {
  if (!h) throw new Error("no harness started");
  return h;
}

let names = 0;
function endpointWithEnv(image: string, templateEnv: Record<string, string>, endpointEnv = {}) {
  const template = started().management.templates.create(ACCOUNT, {
    name: `env-${++names}`,
    imageName: image,
    isServerless: true,
    env: templateEnv,
  });
  return started().management.endpoints.create(ACCOUNT, {
    name: `env-${names}`,
    templateId: template.id,
    workersMin: 0,
    workersMax: 1,
    env: endpointEnv,
  });
}

describe("worker environment", () => {
  it("the fixture works: NODE_OPTIONS=--require evil.js runs it in a plain Node", () => {
    spawnSync(process.execPath, ["-e", ""], {
      env: { PATH: process.env.PATH ?? "", NODE_OPTIONS: `--require ${evil}` },
    });
    expect(existsSync(marker)).toBe(true);
    rmSync(marker);
  });

  it("a built-in image ignores NODE_OPTIONS and LD_* from the template: evil.js never runs, the drop is logged by name", async () => {
    const harness = await startHarness();
    h = harness;
    const ep = endpointWithEnv(
      "runpodkit/echo:1.0",
      { NODE_OPTIONS: `--require ${evil}`, LD_PRELOAD: join(dir, "evil.so"), GREETING: "hi" },
      { NODE_PATH: dir },
    );
    const reply = await harness.call("POST", `/v2/${ep.id}/runsync?wait=60000`, {
      body: { input: { n: 1 } },
    });
    expect(reply.body).toMatchObject({ status: "COMPLETED", output: { n: 1 } });
    expect(existsSync(marker)).toBe(false);
    const warning = harness.logs.find((line) => line.includes(`endpoint ${ep.id}: its workers ignore env`));
    expect(warning).toContain("LD_PRELOAD, NODE_OPTIONS, NODE_PATH");
    expect(harness.logs.join("\n")).not.toContain(dir);
    // The account that set them sees the drop in its worker's logs, by name only.
    const logs = await harness.call("GET", `/v2/${ep.id}/logs`);
    expect(logs.status).toBe(200);
    expect(logs.text).toContain("env LD_PRELOAD, NODE_OPTIONS, NODE_PATH ignored");
    expect(logs.text).not.toContain(dir);
  }, 60_000);

  it("a handler's env has neither the dropped variables nor any account key; the rest of the env arrives", async () => {
    // The service's own environment, which no worker may inherit.
    process.env.RUNPODKIT_API_KEYS = KEY;
    process.env.SERVICE_ONLY_MARKER = "service-only";
    const harness = await startHarness({ config: { handlers: { "acme/env": ENV_HANDLER } } });
    h = harness;
    const ep = endpointWithEnv(
      "acme/env",
      {
        NODE_OPTIONS: `--require ${evil}`,
        NODE_ENV: "production",
        PATH: dir,
        LD_LIBRARY_PATH: dir,
        HF_TOKEN: "hf_template",
      },
      { BASH_FUNC_ls: "() { :; }", MODEL: "m1" },
    );
    const reply = await harness.call("POST", `/v2/${ep.id}/runsync?wait=60000`, { body: { input: {} } });
    const { env } = (reply.body as { output: { env: Record<string, string> } }).output;
    expect(existsSync(marker)).toBe(false);
    expect(env).not.toHaveProperty("NODE_OPTIONS");
    expect(env).not.toHaveProperty("LD_LIBRARY_PATH");
    expect(env).not.toHaveProperty("BASH_FUNC_ls");
    expect(env.PATH).toBe(process.env.PATH);
    expect(env).toMatchObject({ NODE_ENV: "production", HF_TOKEN: "hf_template", MODEL: "m1" });
    // Only the worker's own credential: no account's key, nothing of the service's environment.
    expect(env.RUNPOD_AI_API_KEY).toMatch(/^[\w-]{20,}$/);
    expect(Object.values(env)).not.toContain(KEY);
    expect(Object.values(env)).not.toContain(OTHER_KEY);
    // Of the service's own variables only the worker's tree mark (its id and a random part, which
    // the service uses to end what the handler starts outside its process group).
    expect(Object.keys(env).filter((name) => name.startsWith("RUNPODKIT_"))).toEqual([
      "RUNPODKIT_WORKER_TREE",
    ]);
    expect(env.RUNPODKIT_WORKER_TREE).toMatch(/^.+\.[0-9a-f]{24}$/);
    expect(env).not.toHaveProperty("SERVICE_ONLY_MARKER");
    // The worker's key speaks the worker protocol for this worker only: it is no account's key.
    const workerKey = env.RUNPOD_AI_API_KEY as string;
    expect((await harness.call("GET", "/v1/endpoints", { key: `Bearer ${workerKey}` })).status).toBe(401);
    expect(
      (await harness.call("POST", `/v2/${ep.id}/run`, { key: workerKey, body: { input: {} } })).status,
    ).toBe(401);
  }, 60_000);

  it("the API refuses env names with '=' or NUL and values with NUL, naming the field (REST and GraphQL)", async () => {
    const harness = await startHarness();
    h = harness;
    const template = (env: Record<string, string>) =>
      harness.call("POST", "/v1/templates", {
        body: { name: `bad-env-${++names}`, imageName: "runpodkit/echo:1.0", isServerless: true, env },
      });
    const refused: Record<string, string>[] = [
      { "PYTHONPATH=/tmp/x:": "" },
      { "A\0B": "v" },
      { OK: "a\0b" },
      { "": "v" },
    ];
    for (const env of refused) {
      const reply = await template(env);
      expect(reply.status, JSON.stringify(env)).toBe(400);
      expect(reply.text).toContain("env");
    }
    expect((await template({ "PYTHONPATH=/tmp/x:": "" })).text).toContain('must not contain \\"=\\"');
    expect((await template({ OK: "a\0b" })).text).toContain("NUL");
    const created = harness.management.templates.create(ACCOUNT, {
      name: `ok-env-${++names}`,
      imageName: "runpodkit/echo:1.0",
      isServerless: true,
    });
    const save = await harness.call("POST", "/graphql", {
      body: {
        query: "mutation($input: EndpointInput!) { saveEndpoint(input: $input) { id } }",
        variables: {
          input: {
            name: "bad-env",
            templateId: created.id,
            gpuIds: "AMPERE_16",
            env: [{ key: "BASH_ENV=/tmp/x", value: "" }],
          },
        },
      },
    });
    expect(save.text).toMatch(/env.*must not contain/);
    expect(harness.management.endpoints.list(ACCOUNT)).toEqual([]);
  }, 60_000);

  it("entries a process cannot hold (stored before the API refused them) are dropped: the worker starts and the job completes", async () => {
    const harness = await startHarness({ config: { handlers: { "acme/env": ENV_HANDLER } } });
    h = harness;
    const ep = endpointWithEnv(
      "acme/env",
      { "PYTHONPATH=/tmp/attacker:": "", GREETING: "hi" },
      { NULLED: "a\0b", "PERL5OPT=-Mevil": "" },
    );
    const reply = await harness.call("POST", `/v2/${ep.id}/runsync?wait=60000`, { body: { input: {} } });
    expect(reply.body).toMatchObject({ status: "COMPLETED" });
    const { env } = (reply.body as { output: { env: Record<string, string> } }).output;
    expect(env).not.toHaveProperty("PYTHONPATH");
    expect(env).not.toHaveProperty("PERL5OPT");
    expect(env).not.toHaveProperty("NULLED");
    expect(env.GREETING).toBe("hi");
    const warning = harness.logs.find((line) => line.includes(`endpoint ${ep.id}: its workers ignore env`));
    expect(warning).toContain("NULLED, PERL5OPT=…, PYTHONPATH=…");
    expect(harness.logs.join("\n")).not.toContain("attacker");
    expect(harness.logs.join("\n")).not.toContain("evil");
  }, 60_000);

  it("keeps every other name: the rule is by name, values never matter", () => {
    expect(workerEnv({ NODE_ENV: "x", node_options: "y", LD_AUDIT: "z", HF_HOME: "/h" })).toEqual({
      kept: { NODE_ENV: "x", HF_HOME: "/h" },
      dropped: ["LD_AUDIT", "node_options"],
    });
    for (const name of ["NODE_EXTRA_CA_CERTS", "PYTHONPATH", "OPENSSL_CONF", "DYLD_INSERT_LIBRARIES", "HOME"])
      expect(isRuntimeVariable(name)).toBe(true);
    for (const name of ["PYTHONUNBUFFERED", "CUDA_VISIBLE_DEVICES", "TZ", "MY_NODE_OPTIONS"])
      expect(isRuntimeVariable(name)).toBe(false);
  });
});
