/**
 * The quickstart program run as a CI job runs it: installed from the packed package, the provider
 * configured only from the environment (RUNPOD_API_KEY, RUNPODKIT_*_URL, no stack config), against a
 * local service holding two accounts. A key of the other account (a wrong CI secret) must not make the
 * stack forget its resources.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { LocalStack } from "../../engine/engine";
import { installProgram, PROJECT_ROOT, packProject } from "../../engine/package";
import { RestClient } from "../../sdk/rest";
import { accountIdOf } from "../../service/edge/auth";
import { type RunningService, startService } from "../../service/index";

const STEP_TIMEOUT = 180_000;

describe("a CI job: provider settings from the environment, a key of another account", () => {
  const owner = `rpk_ci_${randomBytes(16).toString("hex")}`;
  const stranger = `rpk_ci_${randomBytes(16).toString("hex")}`;
  /** A second key of the owner's account: the key a rotation moves the CI secret to. */
  const rotated = `rpk_ci_${randomBytes(16).toString("hex")}`;
  let service: RunningService;
  let rest: RestClient;
  let programDir: string;
  let workDir: string;
  const passphrase = randomBytes(12).toString("hex");

  /** The stack as a CI job opens it: everything from the environment, nothing in stack config. */
  const ciStack = (apiKey: string) =>
    LocalStack.open({
      programDir,
      stackName: "prod",
      stateDir: join(workDir, "state"),
      passphrase,
      env: {
        RUNPOD_API_KEY: apiKey,
        RUNPODKIT_REST_URL: service.restUrl,
        RUNPODKIT_GRAPHQL_URL: service.graphqlUrl,
        RUNPODKIT_QUEUE_URL: service.queueUrl,
        RUNPODKIT_DELETE_TIMEOUT: "60",
      },
    });

  const custom = async (stack: LocalStack) =>
    (await stack.state()).resources.filter((r) => r.custom).map((r) => r.id);

  beforeAll(async () => {
    programDir = (await installProgram(join(PROJECT_ROOT, "examples", "quickstart"), await packProject()))
      .dir;
    workDir = await mkdtemp(join(tmpdir(), "runpodkit-ci-"));
    service = await startService({
      apiKeys: [owner, stranger],
      sameAccountKeys: { [rotated]: owner },
      port: 0,
    });
    rest = new RestClient({ apiKey: owner, baseUrl: service.restUrl });
  }, 300_000);

  afterAll(async () => {
    await rest?.close();
    await service?.close();
    if (workDir) await rm(workDir, { recursive: true, force: true });
  });

  test(
    "up from the environment alone; a second up writes nothing",
    async () => {
      const stack = await ciStack(owner);
      expect((await stack.up()).changes).toEqual({ create: 3 });
      const writes = stack.providerCalls.length;
      expect((await stack.up()).changes).toEqual({ same: 3 });
      expect(
        stack.providerCalls.slice(writes).filter((c) => ["create", "update", "delete"].includes(c.op)),
      ).toEqual([]);
      expect(await rest.endpoints.list()).toHaveLength(1);
    },
    STEP_TIMEOUT,
  );

  test(
    "the key rotated (a new key of the same account): preview, refresh and up find nothing to do",
    async () => {
      const stack = await ciStack(rotated);
      const calls = stack.providerCalls.length;
      expect((await stack.preview()).changes).toEqual({ same: 3 });
      expect((await stack.refresh()).changes).toEqual({ same: 2 });
      expect((await stack.up()).changes).toEqual({ same: 3 });
      expect(
        stack.providerCalls.slice(calls).filter((c) => ["create", "update", "delete"].includes(c.op)),
      ).toEqual([]);
      const state = await stack.exportState();
      expect(state.includes(rotated)).toBe(false);
      expect(state.includes(owner)).toBe(false);
    },
    STEP_TIMEOUT,
  );

  test(
    "refresh, destroy and update with a key of another account fail naming the key's settings and the accounts, and keep every resource",
    async () => {
      const good = await ciStack(owner);
      const ids = await custom(good);
      expect(ids).toHaveLength(2);
      const wrong = await ciStack(stranger);
      const said = (error: unknown) => String((error as Error).message);

      const refresh = await wrong.refresh().then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(said(refresh)).toMatch(/runpodkit:apiKey \(else the environment variable RUNPOD_API_KEY\)/);
      expect(said(refresh)).toContain(`created in account ${accountIdOf(owner)}`);
      expect(said(refresh)).toContain(`one of account ${accountIdOf(stranger)}`);
      // Nothing was dropped from the stack.
      expect(await custom(wrong)).toEqual(ids);

      const destroy = await wrong.destroy().then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(said(destroy)).toContain(`created in account ${accountIdOf(owner)}`);
      expect(await custom(wrong)).toEqual(ids);
      // An update finds nothing either: the same refusal, not "deleted outside Pulumi; run pulumi refresh".
      wrong.setConfig("workersMax", { value: "3" });
      await expect(wrong.up()).rejects.toThrow(`created in account ${accountIdOf(owner)}`);
      // The resources are still there, and the right key sees no change.
      expect((await rest.endpoints.list()).map((e) => e.id)).toContain(ids[1]);
      expect((await good.refresh()).changes).toEqual({ same: 2 });
      expect((await good.up()).changes).toEqual({ same: 3 });

      const text = [said(refresh), said(destroy), wrong.logText(), await wrong.exportState()].join("\n");
      // Booleans, so a failure never prints what it found.
      expect(text.includes(owner)).toBe(false);
      expect(text.includes(stranger)).toBe(false);
    },
    STEP_TIMEOUT,
  );

  test(
    "a key with its line end (a secret pasted with it) works; a bad URL in the environment is named as that variable",
    async () => {
      // refresh reads the template through REST, where the key travels in the Authorization header
      // (of the stack the first test made).
      expect(await custom(await ciStack(owner))).toHaveLength(2);
      expect((await (await ciStack(`${owner}\n`)).refresh()).changes).toEqual({ same: 2 });
      expect((await (await ciStack(` ${owner}\r\n`)).refresh()).changes).toEqual({ same: 2 });

      const typo = await LocalStack.open({
        programDir,
        stackName: "typo",
        stateDir: join(workDir, "state"),
        passphrase,
        env: { RUNPOD_API_KEY: owner, RUNPODKIT_REST_URL: "127.0.0.1:8080/v1" },
      });
      await expect(typo.preview()).rejects.toThrow(
        "runpodkit:restUrl: the environment variable RUNPODKIT_REST_URL (read since runpodkit:restUrl is not set) is not an http(s) URL",
      );
    },
    STEP_TIMEOUT,
  );

  test(
    "an endpoint deleted by hand: the update names the way out; refresh drops it and the next up makes it again",
    async () => {
      const stack = await ciStack(owner);
      const endpointId = String((await stack.outputs()).endpointId?.value);
      await rest.endpoints.update(endpointId, { workersMin: 0, workersMax: 0 });
      await rest.endpoints.delete(endpointId);
      stack.setConfig("workersMax", { value: "3" });
      await expect(stack.up()).rejects.toThrow(
        `endpoint ${endpointId} no longer exists (deleted outside Pulumi); run pulumi refresh (or pulumi up --refresh)`,
      );
      expect((await stack.refresh()).changes).toEqual({ same: 1, delete: 1 });
      expect((await stack.up()).changes).toEqual({ same: 2, create: 1 });
      const [again] = await rest.endpoints.list();
      expect(again?.id).not.toBe(endpointId);
      expect(again?.workersMax).toBe(3);
      expect((await stack.destroy()).changes).toEqual({ delete: 3 });
      expect(await rest.endpoints.list()).toEqual([]);
    },
    STEP_TIMEOUT,
  );
});
