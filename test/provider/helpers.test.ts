import { describe, expect, test } from "vitest";
import { CONFIG_KEYS, resolveSettings } from "../../provider/config";
import { diffFields } from "../../provider/diff";
import { packageSpecifier } from "../../provider/dynamic";
import {
  CONNECTION_BROKE,
  isBrokenConnection,
  isDeleteRefusal,
  isNameTaken,
  KEY_REFUSED,
  mayHaveActed,
  NOTHING_ANSWERED,
  ProviderError,
  redact,
  toProviderError,
} from "../../provider/errors";
import { plainJson } from "../../provider/implement";
import { generatedName, isGeneratedName, nextGenerations, resolveName } from "../../provider/naming";
import { retryWithin } from "../../provider/retry";
import { deleteBoundMs, durationMs } from "../../provider/timeouts";
import { containsUnknown, pathHitsUnknown, UNKNOWN } from "../../provider/unknowns";
import { refuseNewerState } from "../../provider/versions";
import {
  ConflictError,
  ConnectionError,
  GraphQLError,
  NotFoundError,
  ServerError,
  UnauthorizedError,
  ValidationError,
} from "../../sdk/errors";
import { virtualPause } from "./support";

describe("naming", () => {
  const basis = { type: "Template", replaceKey: ["NVIDIA", false] };
  const program = { __logicalName: "web", __scope: "shop/prod" };

  test("an explicit name is kept as given", () => {
    expect(resolveName(undefined, { name: "exact", __logicalName: "res" }, basis)).toEqual({
      name: "exact",
      autoNamed: false,
    });
  });

  test("no name: the same program in the same stack gets the same name, every time", () => {
    const first = resolveName(undefined, program, basis);
    expect(first).toEqual({ name: expect.stringMatching(/^web-[0-9a-f]{7}$/), autoNamed: true });
    expect(resolveName(undefined, { ...program }, { ...basis })).toEqual(first);
    // An update keeps the name of the old inputs (even one an older runpodkit drew at random).
    expect(resolveName({ name: "web-1a2b3c4", __autoNamed: true }, program, basis)).toEqual({
      name: "web-1a2b3c4",
      autoNamed: true,
    });
  });

  test("another stack, logical name or replace key gives another name", () => {
    const name = generatedName(program, basis);
    expect(generatedName({ ...program, __scope: "shop/dev" }, basis)).not.toBe(name);
    expect(generatedName({ ...program, __logicalName: "api" }, basis)).toMatch(/^api-[0-9a-f]{7}$/);
    // A replacement (new replace key) gets a fresh name, so it can be created before the old is deleted.
    expect(generatedName(program, { ...basis, replaceKey: ["AMD", false] })).not.toBe(name);
    // The next generations are distinct and recognised as this resource's own.
    const next = nextGenerations(program, basis);
    expect(new Set([name, ...next]).size).toBe(next.length + 1);
    expect(isGeneratedName(next[0], program, basis)).toBe(true);
    expect(isGeneratedName("web-edited", program, basis)).toBe(false);
  });

  test("an old explicit name is not kept once the name is removed", () => {
    const next = resolveName({ name: "exact", __autoNamed: false }, program, basis);
    expect(next).toEqual({ name: generatedName(program, basis), autoNamed: true });
  });

  test("a replace key still unknown in preview leaves the name unknown", () => {
    expect(generatedName(program, { ...basis, replaceKey: [UNKNOWN, false] })).toBe(UNKNOWN);
  });
});

describe("unknowns", () => {
  test("found anywhere in the tree", () => {
    expect(containsUnknown({ a: [1, { b: UNKNOWN }] })).toBe(true);
    expect(containsUnknown({ a: [1, { b: "x" }] })).toBe(false);
    expect(pathHitsUnknown({ env: UNKNOWN }, ["env", "KEY"])).toBe(true);
    expect(pathHitsUnknown({ env: { KEY: "v" } }, ["env", "KEY"])).toBe(false);
  });
});

describe("diffFields", () => {
  const spec = {
    fields: ["name", "size", "dataCenterId"],
    replaceOnChange: ["dataCenterId"],
    uniqueName: false,
  };

  test("equal inputs: no changes", () => {
    const same = { name: "v", size: 10, dataCenterId: "EU-RO-1" };
    expect(diffFields(same, { ...same }, spec)).toEqual({
      changes: false,
      changed: [],
      replaces: [],
    });
  });

  test("an updatable change updates; a replace-on-change field replaces", () => {
    const old = { name: "v", size: 10, dataCenterId: "EU-RO-1" };
    expect(diffFields(old, { ...old, size: 20 }, spec)).toMatchObject({ changes: true, replaces: [] });
    expect(diffFields(old, { ...old, dataCenterId: "US-TX-3" }, spec)).toMatchObject({
      changed: ["dataCenterId"],
      replaces: ["dataCenterId"],
    });
  });

  test("an unknown value is a possible change", () => {
    const old = { name: "v", size: 10, dataCenterId: "EU-RO-1" };
    expect(diffFields(old, { ...old, dataCenterId: UNKNOWN }, spec).replaces).toEqual(["dataCenterId"]);
  });
});

describe("retryWithin", () => {
  const refused = () => Object.assign(new Error("in use"), { code: "CONFLICT" });

  test("retries refusals with growing waits until the call succeeds", async () => {
    const pause = virtualPause();
    let calls = 0;
    const result = await retryWithin(
      async () => {
        calls++;
        if (calls < 4) throw refused();
        return "done";
      },
      { operation: "delete x", boundMs: 60_000, retryable: () => true, pause, initialDelayMs: 1000 },
    );
    expect(result).toBe("done");
    expect(pause.slept).toEqual([1000, 2000, 4000]);
  });

  test("past the bound: a TIMEOUT error that names the bound and the refusal", async () => {
    const pause = virtualPause();
    const failure = retryWithin(
      async () => {
        throw refused();
      },
      { operation: "delete template t", boundMs: 10_000, retryable: () => true, pause, initialDelayMs: 1000 },
    );
    await expect(failure).rejects.toMatchObject({ code: "TIMEOUT", operation: "delete template t" });
    await expect(failure).rejects.toThrow(/bound of 10s: in use/);
    // 1 + 2 + 4 + 3 (capped at the bound) = 10 s of waiting, never more.
    expect(pause.slept).toEqual([1000, 2000, 4000, 3000]);
  });

  test("other errors are thrown at once", async () => {
    const pause = virtualPause();
    const failure = retryWithin(
      async () => {
        throw new Error("bad request");
      },
      { operation: "op", boundMs: 10_000, retryable: () => false, pause },
    );
    await expect(failure).rejects.toThrow("bad request");
    expect(pause.slept).toEqual([]);
  });
});

describe("settings", () => {
  test("Pulumi config wins over the environment, which wins over the defaults", () => {
    const config = { get: (key: string) => ({ "runpodkit:apiKey": "cfg-key-123" })[key] };
    const settings = resolveSettings(config, {
      RUNPOD_API_KEY: "env-key-456",
      RUNPODKIT_REST_URL: "http://127.0.0.1:9999/v1/",
      RUNPODKIT_DELETE_TIMEOUT: "12",
    });
    expect(settings).toEqual({
      apiKey: "cfg-key-123",
      restUrl: "http://127.0.0.1:9999/v1",
      graphqlUrl: "https://api.runpod.io/graphql",
      queueUrl: "https://api.runpod.ai",
      deleteTimeoutMs: 12_000,
    });
  });

  test("no key anywhere: a CONFIG error naming the config key and the variable", () => {
    expect(() => resolveSettings(undefined, {})).toThrow(/runpodkit:apiKey.*RUNPOD_API_KEY/);
  });

  test("a URL that is not http(s) is refused by name", () => {
    expect(() =>
      resolveSettings(undefined, { RUNPOD_API_KEY: "k-123456", RUNPODKIT_QUEUE_URL: "ftp://x" }),
    ).toThrow(/runpodkit:queueUrl/);
  });

  test("a queue URL given as the job API's base (with /v2, as the SDK takes it) is refused with the host to set", () => {
    for (const queue of ["http://127.0.0.1:8080/v2", "http://127.0.0.1:8080/v2/"]) {
      expect(() =>
        resolveSettings(undefined, { RUNPOD_API_KEY: "k-123456", RUNPODKIT_QUEUE_URL: queue }),
      ).toThrow(
        expect.objectContaining({
          code: "CONFIG",
          field: "runpodkit:queueUrl",
          message: expect.stringContaining(
            "the environment variable RUNPODKIT_QUEUE_URL (read since runpodkit:queueUrl is not set) is the job API's host, without /v2 (an endpoint's url is {queueUrl}/v2/{id}): set http://127.0.0.1:8080",
          ),
        }),
      );
    }
    // A host whose own path merely contains v2 stays allowed.
    expect(
      resolveSettings(undefined, { RUNPOD_API_KEY: "k-123456", RUNPODKIT_QUEUE_URL: "https://proxy/v2x" })
        .queueUrl,
    ).toBe("https://proxy/v2x");
  });
});

describe("errors", () => {
  test("a refused key says where the provider took it from and what to check", () => {
    const refused = new UnauthorizedError({
      operation: "rest.templates.create",
      message: "rest.templates.create: Unauthorized: the API key is not valid (HTTP 401)",
    });
    const wrapped = toProviderError(refused, "create template worker", []);
    expect(wrapped).toMatchObject({ code: "SERVICE", serviceCode: "UNAUTHORIZED" });
    expect(wrapped.message).toBe(
      `create template worker: rest.templates.create: Unauthorized: the API key is not valid (HTTP 401) (${KEY_REFUSED})`,
    );
    // The hint names the config key and the variable the settings read.
    expect(KEY_REFUSED).toContain(CONFIG_KEYS.apiKey.key);
    expect(KEY_REFUSED).toContain(CONFIG_KEYS.apiKey.env);
    // Other refusals get none.
    const missing = new NotFoundError({ operation: "rest.templates.get", message: "template t1 not found" });
    expect(toProviderError(missing, "read template t1", []).message).toBe(
      "read template t1: template t1 not found",
    );
  });

  test("a connection refused says nothing answers there and made nothing; one that broke after it was made says so, may have acted, and may be sent again", () => {
    const socketError = (code: string) => Object.assign(new Error(code), { code });
    const refused = new ConnectionError({
      operation: "graphql.saveEndpoint",
      message: "graphql.saveEndpoint: connect ECONNREFUSED 127.0.0.1:1",
      cause: socketError("ECONNREFUSED"),
    });
    const broke = new ConnectionError({
      operation: "graphql.saveEndpoint",
      message: "graphql.saveEndpoint: other side closed",
      cause: socketError("UND_ERR_SOCKET"),
    });
    expect(isBrokenConnection(refused)).toBe(false);
    expect(isBrokenConnection(broke)).toBe(true);
    // A create refused was never sent: nothing to look for after it (and no service to ask, for as
    // long as the create's bound); one cut off after it was sent may have been made.
    expect(mayHaveActed(refused)).toBe(false);
    expect(mayHaveActed(broke)).toBe(true);
    expect(toProviderError(refused, "update endpoint api", []).message).toContain(NOTHING_ANSWERED);
    const wrapped = toProviderError(broke, "update endpoint api", []);
    expect(wrapped.message).toBe(
      `update endpoint api: graphql.saveEndpoint: other side closed (${CONNECTION_BROKE})`,
    );
    expect(wrapped.message).not.toContain(NOTHING_ANSWERED);
  });

  test("redact removes api_key values, bearer tokens and known secrets", () => {
    const text = "GET https://h/graphql?api_key=sk-live-999&x=1 Bearer abc.def sk-live-999";
    expect(redact(text, ["sk-live-999"])).toBe("GET https://h/graphql?api_key=***&x=1 Bearer *** ***");
  });

  test("SDK errors keep their code and field, lose any credential", () => {
    const sdkError = new NotFoundError({ operation: "rest.templates.get", message: "template t1 not found" });
    const wrapped = toProviderError(sdkError, "read template t1", ["sk-live-999"]);
    expect(wrapped).toBeInstanceOf(ProviderError);
    expect(wrapped).toMatchObject({
      code: "NOT_FOUND",
      serviceCode: "NOT_FOUND",
      operation: "read template t1",
    });
    const leaky = toProviderError(new Error("failed https://h?api_key=sk-live-999"), "create x", [
      "sk-live-999",
    ]);
    expect(leaky.message).not.toContain("sk-live-999");
  });
});

describe("serializable outputs", () => {
  test("undefined becomes null at any depth; dates become ISO strings", () => {
    expect(plainJson({ a: undefined, b: [undefined, 1], c: { d: undefined }, e: new Date(0) })).toEqual({
      a: null,
      b: [null, 1],
      c: { d: null },
      e: "1970-01-01T00:00:00.000Z",
    });
  });
});

describe("packageSpecifier", () => {
  test("a file of this checkout is named by package path, without extension", () => {
    expect(packageSpecifier(`${__dirname}/../../provider/endpoint-provider.ts`)).toBe(
      "runpodkit/provider/endpoint-provider",
    );
  });
});

describe("delete refusals", () => {
  const op = { operation: "rest.templates.delete" };

  test("by the service's code: only in use (IN_USE) and workers still running (PRECONDITION) are waited out", () => {
    expect(
      isDeleteRefusal(new ConflictError({ ...op, message: "used", status: 400, serviceCode: "IN_USE" })),
    ).toBe(true);
    expect(
      isDeleteRefusal(new ConflictError({ ...op, message: "x", status: 400, serviceCode: "PRECONDITION" })),
    ).toBe(true);
    // A coded reply is judged by its code, whatever its text says.
    expect(
      isDeleteRefusal(new ConflictError({ ...op, message: "in use", status: 400, serviceCode: "CONFLICT" })),
    ).toBe(false);
    expect(
      isDeleteRefusal(
        new ValidationError({ ...op, message: "in use", status: 400, serviceCode: "VALIDATION" }),
      ),
    ).toBe(false);
  });

  test("without a code (the real REST API sends only a message): a 400 saying in use, nothing else", () => {
    const uncoded = (message: string) => new ValidationError({ ...op, message, status: 400 });
    expect(isDeleteRefusal(uncoded("Template is in use by endpoint abc"))).toBe(true);
    expect(isDeleteRefusal(uncoded("network volume is attached to a pod"))).toBe(true);
    expect(isDeleteRefusal(uncoded("Invalid template ID."))).toBe(false);
    expect(isDeleteRefusal(new ServerError({ ...op, message: "in use", status: 503 }))).toBe(false);
    expect(isDeleteRefusal(new GraphQLError({ ...op, message: "endpoint still has workers running" }))).toBe(
      true,
    );
    expect(isDeleteRefusal(new Error("in use"))).toBe(false); // not a service reply
  });

  test("a taken name, by code or by text when there is no code", () => {
    expect(
      isNameTaken(new ConflictError({ ...op, message: "x", status: 400, serviceCode: "CONFLICT" })),
    ).toBe(true);
    expect(isNameTaken(new ConflictError({ ...op, message: "x", status: 400, serviceCode: "IN_USE" }))).toBe(
      false,
    );
    expect(
      isNameTaken(new ValidationError({ ...op, message: "Template name already exists", status: 400 })),
    ).toBe(true);
  });
});

describe("custom timeouts", () => {
  test("Go durations as Pulumi takes them", () => {
    expect(durationMs("90s")).toBe(90_000);
    expect(durationMs("1h30m")).toBe(5_400_000);
    expect(durationMs("1.5m")).toBe(90_000);
    expect(durationMs("250ms")).toBe(250);
    expect(durationMs("5 minutes")).toBeUndefined();
    expect(durationMs("")).toBeUndefined();
  });

  test("customTimeouts.delete bounds the wait; otherwise the configured deleteTimeout", () => {
    expect(deleteBoundMs({ __customTimeouts: { delete: "2m" } }, 300_000)).toBe(120_000);
    expect(deleteBoundMs({ __customTimeouts: { create: "2m", delete: null } }, 300_000)).toBe(300_000);
    expect(deleteBoundMs({}, 300_000)).toBe(300_000);
  });
});

describe("versions", () => {
  test("state from a newer runpodkit is refused; older or unversioned state is read", () => {
    expect(() => refuseNewerState({ __runpodkitVersion: "0.9.0" }, "read template t", "0.2.0")).toThrow(
      /written by runpodkit 0\.9\.0, but the program folder has runpodkit 0\.2\.0.*npm install runpodkit@\^0\.9\.0/,
    );
    expect(() => refuseNewerState({ __runpodkitVersion: "0.1.0" }, "read template t", "0.2.0")).not.toThrow();
    expect(() => refuseNewerState({}, "read template t", "0.2.0")).not.toThrow();
  });
});
