import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { containerRegistryAuthForwarder } from "../../provider/container-registry-auth";
import { propertyPathSegments, replacesOnChanges } from "../../provider/diff";
import { endpointForwarder } from "../../provider/endpoint";
import { templateForwarder } from "../../provider/template";
import { UNKNOWN } from "../../provider/unknowns";
import { RestClient } from "../../sdk/rest";
import { ManualClock } from "../../service/clock";
import {
  type DynamicProviderHost,
  dynamicUrn,
  type Props,
  serializeProvider,
  stackConfig,
  startCheckoutHost,
} from "../helpers/pulumi-host";
import { type TestService, withService } from "../helpers/service";

/**
 * replaceOnChanges through Pulumi's own provider host. Pulumi's engine applies the option only to the
 * keys a diff names as changed (applyReplaceOnChanges, over DiffResult.ChangedKeys), and the dynamic
 * host answers only `changes`, `replaces` and `deleteBeforeReplace`: the engine alone would replace
 * nothing. The classes record the option as `__replaceOnChanges`; the diff must answer the replace.
 */

let service: TestService;
let host: DynamicProviderHost;
let rest: RestClient;
const text: Record<string, string> = {};

beforeAll(async () => {
  service = await withService({ clock: new ManualClock() });
  rest = new RestClient({ apiKey: service.apiKey, baseUrl: service.restUrl });
  text.Endpoint = await serializeProvider(endpointForwarder);
  text.Template = await serializeProvider(templateForwarder);
  text.ContainerRegistryAuth = await serializeProvider(containerRegistryAuthForwarder);
  host = await startCheckoutHost();
  await host.configure(stackConfig(service, service.apiKey, { "runpodkit:deleteTimeout": "5" }));
});

afterAll(async () => {
  await host?.close();
  await rest?.close();
  await service?.close();
});

/** check then create over the wire, as the engine does for a new resource. */
async function up(type: string, name: string, props: Props) {
  const urn = dynamicUrn(type, name);
  const news = { ...props, __logicalName: name, __provider: text[type] };
  const checked = await host.check(urn, {}, news);
  expect(checked.failures).toEqual([]);
  const created = await host.create(urn, checked.inputs);
  return { urn, inputs: checked.inputs, ...created };
}

/** The diff of new inputs `change` on top of the resource's, checked with its old inputs. */
async function diffOf(r: Awaited<ReturnType<typeof up>>, change: Props) {
  const next = await host.check(r.urn, r.inputs, { ...r.inputs, ...change });
  expect(next.failures).toEqual([]);
  return { next, diff: await host.diff(r.urn, r.id, r.properties, next.inputs, r.inputs) };
}

describe("replaceOnChanges, through Pulumi's provider host", () => {
  test("a named Template with replaceOnChanges imageName: a new image replaces it under its name, the old one moved aside then deleted", async () => {
    const t = await up("Template", "worker", {
      name: "roc-worker",
      imageName: "img:1",
      isServerless: true,
      env: { A: "1" },
      __replaceOnChanges: ["imageName"],
    });
    // Another field stays an in-place update.
    expect((await diffOf(t, { env: { A: "2" } })).diff).toEqual({
      changes: "some",
      replaces: [],
      deleteBeforeReplace: false,
    });
    const { next, diff } = await diffOf(t, { imageName: "img:2" });
    // The service renames templates, so the old one is moved aside rather than deleted first.
    expect(diff).toEqual({ changes: "some", replaces: ["imageName"], deleteBeforeReplace: false });
    // The engine checks a replacement without old inputs, then creates it.
    const fresh = await host.check(t.urn, {}, next.inputs);
    const replacement = await host.create(t.urn, fresh.inputs);
    expect(replacement.id).not.toBe(t.id);
    expect(replacement.properties).toMatchObject({ name: "roc-worker", imageName: "img:2" });
    expect((await rest.templates.get(t.id)).name).toBe(`roc-worker-replaced-${t.id}`);
    await host.delete(t.urn, t.id, t.properties);
    const left = await rest.templates.list();
    expect(left.filter((x) => x.name.startsWith("roc-worker")).map((x) => [x.name, x.id])).toEqual([
      ["roc-worker", replacement.id],
    ]);
    await host.delete(t.urn, replacement.id, replacement.properties);
  });

  test("an unnamed Template: the replacement takes the next generated name, and the next diff finds nothing to do", async () => {
    // What the program sends each time: no name, so check generates one.
    const program = (imageName: string) => ({
      imageName,
      isServerless: true,
      __replaceOnChanges: ["imageName"],
      __logicalName: "gen",
      __provider: text.Template,
    });
    const t = await up("Template", "gen", program("img:1"));
    const next = await host.check(t.urn, t.inputs, program("img:2"));
    expect(next.inputs.name).toBe(t.properties.name);
    const diff = await host.diff(t.urn, t.id, t.properties, next.inputs, t.inputs);
    expect(diff).toEqual({ changes: "some", replaces: ["imageName"], deleteBeforeReplace: false });
    const fresh = await host.check(t.urn, {}, program("img:2"));
    // The predecessor holds the first generated name until it is deleted at the end of the update.
    expect(fresh.inputs.name).toBe(t.properties.name);
    const replacement = await host.create(t.urn, fresh.inputs);
    expect(replacement.properties.name).not.toBe(t.properties.name);
    expect(String(replacement.properties.name)).toMatch(/^gen-[0-9a-f]{7}$/);
    await host.delete(t.urn, t.id, t.properties);
    const again = await host.check(t.urn, fresh.inputs, program("img:2"));
    expect(
      await host.diff(t.urn, replacement.id, replacement.properties, again.inputs, fresh.inputs),
    ).toEqual({
      changes: "none",
      replaces: [],
      deleteBeforeReplace: false,
    });
    await host.delete(t.urn, replacement.id, replacement.properties);
  });

  test("an Endpoint with replaceOnChanges env.MODEL: only that key's change replaces it, naming env", async () => {
    const tpl = await up("Template", "ep-tpl", { imageName: "img:1", isServerless: true });
    const e = await up("Endpoint", "api", {
      templateId: tpl.id,
      workersMax: 1,
      env: { MODEL: "small", LOG: "info" },
      __replaceOnChanges: ['env["MODEL"]'],
    });
    expect((await diffOf(e, { env: { MODEL: "small", LOG: "debug" } })).diff.replaces).toEqual([]);
    expect((await diffOf(e, { workersMax: 2 })).diff.replaces).toEqual([]);
    expect((await diffOf(e, { env: { MODEL: "large", LOG: "info" } })).diff).toEqual({
      changes: "some",
      replaces: ["env"],
      deleteBeforeReplace: false,
    });
    // During preview a value not known yet may change: the replacement is announced.
    expect((await diffOf(e, { env: { MODEL: UNKNOWN, LOG: "info" } })).diff.replaces).toEqual(["env"]);
    expect((await diffOf(e, { env: UNKNOWN })).diff.replaces).toEqual(["env"]);
    await host.delete(e.urn, e.id, e.properties);
    await host.delete(tpl.urn, tpl.id, tpl.properties);
  });

  test("a named ContainerRegistryAuth with replaceOnChanges *: any change replaces it, deleting the holder of the name first", async () => {
    const a = await up("ContainerRegistryAuth", "registry", {
      name: "roc-registry",
      username: "bot",
      password: "first-password",
      __replaceOnChanges: ["*"],
    });
    // REST cannot rename credentials: the only way to a second one of the same name is delete first.
    expect((await diffOf(a, { password: "second-password" })).diff).toEqual({
      changes: "some",
      replaces: ["password"],
      deleteBeforeReplace: true,
    });
    expect((await diffOf(a, {})).diff).toEqual({ changes: "none", replaces: [], deleteBeforeReplace: false });
    await host.delete(a.urn, a.id, a.properties);
  });

  test("a named ContainerRegistryAuth in use, forced to replace: the delete-first fails at once, saying to give the new one another name (credentials cannot be moved aside)", async () => {
    const a = await up("ContainerRegistryAuth", "used-registry", {
      name: "roc-used-registry",
      username: "bot",
      password: "first-password",
      __replaceOnChanges: ["username"],
    });
    const t = await up("Template", "private", {
      imageName: "ghcr.io/acme/private:1",
      isServerless: true,
      containerRegistryAuthId: a.id,
    });
    const { diff } = await diffOf(a, { username: "robot" });
    expect(diff).toEqual({ changes: "some", replaces: ["username"], deleteBeforeReplace: true });
    // Pulumi's dependent pass leaves the template (its registry auth changes in place), then deletes.
    const failure = await host.delete(a.urn, a.id, a.properties).then(
      () => undefined,
      (error: unknown) => String(error),
    );
    expect(failure).toContain(`is still used by template ${t.properties.name} (id ${t.id})`);
    expect(failure).toContain("give the replacement another name (or omit name");
    expect(failure).not.toContain("renamed aside");
    expect((await rest.containerRegistryAuths.get(a.id)).name).toBe("roc-used-registry");
    await host.delete(t.urn, t.id, t.properties);
    await host.delete(a.urn, a.id, a.properties);
  });

  test("without the option, nothing changes: a new image updates the template in place", async () => {
    const t = await up("Template", "plain", { imageName: "img:1", isServerless: true });
    expect((await diffOf(t, { imageName: "img:2" })).diff).toEqual({
      changes: "some",
      replaces: [],
      deleteBeforeReplace: false,
    });
    await host.delete(t.urn, t.id, t.properties);
  });
});

describe("replaceOnChanges paths", () => {
  test("Pulumi's spellings parse to segments; what is not a path gives none", () => {
    expect(propertyPathSegments("imageName")).toEqual(["imageName"]);
    expect(propertyPathSegments("env.MODEL")).toEqual(["env", "MODEL"]);
    expect(propertyPathSegments('env["MODEL.v2"]')).toEqual(["env", "MODEL.v2"]);
    expect(propertyPathSegments("networkVolumeIds[1]")).toEqual(["networkVolumeIds", 1]);
    expect(propertyPathSegments("env.*")).toEqual(["env", "*"]);
    expect(propertyPathSegments("ports[*]")).toEqual(["ports", "*"]);
    expect(propertyPathSegments("*")).toEqual(["*"]);
    for (const bad of ["", ".env", "env..MODEL", "env[", 'env["x]', "envMODEL]"]) {
      expect(propertyPathSegments(bad), bad).toBeUndefined();
    }
  });

  test("each path names its top-level property when the value under it changed, and only then", () => {
    const olds = { env: { MODEL: "a", LOG: "x" }, ports: ["80/http", "22/tcp"], workersMax: 1 };
    const news = { env: { MODEL: "a", LOG: "y" }, ports: ["80/http", "2222/tcp"], workersMax: 1 };
    const fields = ["env", "ports", "workersMax"];
    expect(replacesOnChanges(["env.MODEL", "ports[0]"], olds, news, fields)).toEqual([]);
    expect(replacesOnChanges(["env.LOG"], olds, news, fields)).toEqual(["env"]);
    expect(replacesOnChanges(["ports[1]", "workersMax"], olds, news, fields)).toEqual(["ports"]);
    expect(replacesOnChanges(["env.*"], olds, news, fields)).toEqual(["env"]);
    expect(replacesOnChanges(["*"], olds, news, fields)).toEqual(["env", "ports"]);
    // A key added or removed is a change of the value under the path.
    expect(replacesOnChanges(["env.NEW"], olds, { ...news, env: { NEW: "1" } }, fields)).toEqual(["env"]);
    // Not an option the classes record: ignored, never a throw.
    expect(replacesOnChanges("imageName", olds, news, fields)).toEqual([]);
    expect(replacesOnChanges([42], olds, news, fields)).toEqual([]);
  });
});
